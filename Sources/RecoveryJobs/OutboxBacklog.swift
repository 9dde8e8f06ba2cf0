import Foundation
import Logging
import PipelineOperations
import PostgresNIO

/// The change events grant committed and has not yet published to the changes topic.
public struct OutboxBacklog: Sendable, Hashable, OperatorJSONObject {
    /// Rows with `published_at` NULL.
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

    public static func load(database: PostgresClient, logger: Logger) async throws -> OutboxBacklog {
        do {
            let rows = try await database.query(
                """
                SELECT count(*)::bigint, min(created_at), extract(epoch FROM now() - min(created_at))::float8
                FROM outbox WHERE published_at IS NULL
                """, logger: logger)
            for try await (count, oldest, age) in rows.decode((Int64, Date?, Double?).self) {
                return OutboxBacklog(unpublished: count, oldestCreatedAt: oldest, oldestAgeSeconds: age)
            }
            return OutboxBacklog(unpublished: 0)
        } catch {
            throw OperationsError("database_error", "reading the outbox failed: \(String(reflecting: error).prefix(300))")
        }
    }
}
