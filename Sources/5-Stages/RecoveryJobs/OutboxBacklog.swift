import Foundation
import PipelineOperations

/// The change events grant committed and has not yet published to the changes topic, as
/// `appstorectl status` shows it (read by `EntitlementStore.outboxBacklog()`, grant's own query).
public struct OutboxBacklog: Sendable, Hashable, OperatorJSONObject {
    /// Rows waiting in the outbox (published ones are deleted).
    public var unpublished: Int64
    /// When the oldest of them was written.
    public var oldestCreatedAt: Date?
    /// Its age in seconds at the time of the reading.
    public var oldestAgeSeconds: Double?

    public init(unpublished: Int64, oldestCreatedAt: Date? = nil, oldestAgeSeconds: Double? = nil) {
        self.unpublished = unpublished
        self.oldestCreatedAt = oldestCreatedAt
        self.oldestAgeSeconds = oldestAgeSeconds
    }
}
