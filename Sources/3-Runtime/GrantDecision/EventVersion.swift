import Foundation

/// The order in which facts about one purchase supersede each other.
///
/// Apple's notifications arrive late, duplicated and out of order, so arrival order means nothing.
/// What counts is the moment a fact describes, by Apple's clock: for an event enriched from the App
/// Store Server API that is when Apple answered (the newest `signedDate` Apple put in the answer or
/// the event: the history and status are the truth at that moment, whichever notification carried
/// them); for an event that is its own truth (a consumable's transaction) it is the transaction's
/// `signedDate`. No host's clock takes part, so a skewed or stepped-back enrich cannot make a newer
/// fact look stale. Ties break on the event key, so the order is total and every replay picks the
/// same winner.
public struct EventVersion: Hashable, Comparable, Codable, Sendable {
    /// The moment the facts describe.
    public var asOf: Date
    /// The event's key (see ``GrantEvent/eventKey``), to break ties deterministically.
    public var eventKey: String

    public init(asOf: Date, eventKey: String) {
        self.asOf = asOf.wholeMilliseconds
        self.eventKey = eventKey
    }

    public static func < (a: EventVersion, b: EventVersion) -> Bool {
        if a.asOf != b.asOf { return a.asOf < b.asOf }
        return a.eventKey < b.eventKey
    }
}

extension Date {
    /// This date rounded to Apple's millisecond. Dates that went through Postgres (microseconds)
    /// and dates decoded from Apple's JSON then compare equal, so a reloaded row never looks changed.
    public var wholeMilliseconds: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
