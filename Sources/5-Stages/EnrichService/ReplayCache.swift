import AppStore
import Foundation
import KafkaClient
import Synchronization

/// The events enrich has recently enriched AND whose output the broker acknowledged, so a replay of
/// one (the same notification posted again, the same upload sent twice) is dropped before it costs
/// an API call.
///
/// A key enters only once its record's output was delivered (``EnrichStage/delivered(_:)``, called
/// by the runtime after the broker's acknowledgement): until then a failed produce makes the runtime
/// process the record again, and dropping that retry would lose an acknowledged event. Keys are the
/// event keys grant deduplicates by (``PipelineRecords/VerifiedRecord/eventKey``), scoped by
/// environment, so enrich drops nothing grant would not ignore anyway. Held in memory, bounded in
/// count (least recently seen forgotten first), empty after a restart.
final class ReplayCache: Sendable {
    /// Where an input record sits: the record there never changes, so neither does its key.
    struct Position: Hashable, Sendable {
        var topic: String
        var partition: Int32
        var offset: Int64

        init(_ message: KafkaMessage) {
            topic = message.topic
            partition = message.partition
            offset = message.offset
        }
    }

    private struct State {
        /// Keys of events whose output was delivered.
        var delivered: GenerationalCache<String, Bool>
        /// Keys of records being processed, by position, until their output is delivered. Bounded
        /// too: forgetting one only means a later replay of it costs a lookup.
        var pending: GenerationalCache<Position, String>
    }

    let capacity: Int
    private let state: Mutex<State>

    /// - Parameter capacity: Most event keys remembered; 0 turns the cache off.
    init(capacity: Int) {
        self.capacity = max(0, capacity)
        state = Mutex(
            State(
                delivered: GenerationalCache(capacity: max(1, capacity)),
                pending: GenerationalCache(capacity: 20_000)))
    }

    var isEnabled: Bool { capacity > 0 }

    /// Whether the event's output was delivered before (a hit counts as a use).
    func wasDelivered(_ key: String) -> Bool {
        guard isEnabled else { return false }
        return state.withLock { $0.delivered.value(for: key) != nil }
    }

    /// Remembers which event the record at `message`'s position is, until its output is delivered.
    func processing(_ message: KafkaMessage, key: String) {
        guard isEnabled else { return }
        state.withLock { $0.pending.insert(key, for: Position(message)) }
    }

    /// The outputs of `inputs` were delivered: their events count as enriched from now on.
    func delivered(_ inputs: [KafkaMessage]) {
        guard isEnabled else { return }
        state.withLock { state in
            for message in inputs {
                let position = Position(message)
                guard let key = state.pending.value(for: position) else { continue }
                state.pending.removeValue(forKey: position)
                state.delivered.insert(true, for: key)
            }
        }
    }

    /// Event keys remembered now (delivered ones).
    var count: Int { state.withLock { $0.delivered.count } }
}

/// Recent lookup answers per purchase, shared across batches for a short time.
///
/// An answer serves a record only if it was requested after the record arrived (the later of its
/// `ingested-at` header and its `verifiedAt`, plus the millisecond those are rounded to), so every
/// genuinely new event is still enriched from data Apple gave after the event existed; and only
/// while it is younger than the TTL. An answer fetched without the subscription status does not
/// serve an auto-renewable's record.
final class LookupCache: Sendable {
    struct Entry: Sendable {
        var key: PurchaseKey
        var result: PurchaseLookupResult
    }

    let timeToLive: TimeInterval
    private let entries: Mutex<GenerationalCache<String, Entry>>

    /// - Parameters:
    ///   - timeToLive: Seconds an answer may serve later records after it arrived; 0 turns the cache off.
    ///   - capacity: Most purchases remembered.
    init(timeToLive: TimeInterval, capacity: Int) {
        self.timeToLive = max(0, timeToLive)
        entries = Mutex(GenerationalCache(capacity: max(1, capacity)))
    }

    var isEnabled: Bool { timeToLive > 0 }

    /// A remembered answer for `key` that may serve a record which arrived by `arrival`.
    func answer(for key: PurchaseKey, arrivedBy arrival: Date, now: Date) -> PurchaseLookupResult? {
        guard isEnabled else { return nil }
        return entries.withLock { entries -> PurchaseLookupResult? in
            guard let entry = entries.value(for: key.coalescingKey) else { return nil }
            let age = now.timeIntervalSince(entry.result.fetchedAt)
            guard age >= 0, age <= timeToLive else {
                entries.removeValue(forKey: key.coalescingKey)
                return nil
            }
            guard Self.serves(entry.result, fetchedFor: entry.key, record: key, arrivedBy: arrival) else { return nil }
            return entry.result
        }
    }

    /// Remembers a fresh answer (a newer one for the same purchase replaces it).
    func keep(_ result: PurchaseLookupResult, for key: PurchaseKey) {
        guard isEnabled else { return }
        entries.withLock { entries in
            if let existing = entries.value(for: key.coalescingKey), existing.result.requestedAt > result.requestedAt { return }
            entries.insert(Entry(key: key, result: result), for: key.coalescingKey)
        }
    }

    /// Whether an answer fetched for `fetchedFor` may enrich a record of `record` that arrived by
    /// `arrival`: requested after the record arrived, and with the status when the record needs it.
    static func serves(_ result: PurchaseLookupResult, fetchedFor: PurchaseKey, record: PurchaseKey, arrivedBy arrival: Date) -> Bool {
        guard result.requestedAt >= arrival else { return false }
        return fetchedFor.isAutoRenewable || !record.isAutoRenewable
    }

    /// When a record arrived, at the latest: the later of its `ingested-at` and verify's
    /// `verifiedAt`, plus one millisecond because both are written in whole milliseconds.
    static func arrival(ingestedAt: Date?, verifiedAt: Date) -> Date {
        max(ingestedAt ?? verifiedAt, verifiedAt).addingTimeInterval(0.001)
    }
}
