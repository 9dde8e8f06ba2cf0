import PostgresNIO

/// An event grant applied and committed: its environment and event key, the `notifications` row
/// every applied event leaves (new, or recorded before for a duplicate).
public struct CommittedEvent: Hashable, Sendable {
    public var environment: String
    public var eventKey: String

    public init(environment: String, eventKey: String) {
        self.environment = environment
        self.eventKey = eventKey
    }
}

extension EntitlementStore {
    /// The events of `events` that Postgres does not hold. Grant committed each of them, and rows
    /// are never deleted from `notifications`: one missing means Postgres lost committed work (a
    /// restore, a failover to a standby that had not received the last commits), and the offsets
    /// grant committed run ahead of it.
    public func missing(_ events: [CommittedEvent]) async throws(StoreError) -> [CommittedEvent] {
        guard !events.isEmpty else { return [] }
        do {
            return try await StoreDeadline.run(operationTimeout, "checking committed events") {
                try await self.client.withConnection { connection in
                    var missing: [CommittedEvent] = []
                    let rows = try await connection.execute(PreparedRows<StoreStatements.MissingEvents>(rows: events), logger: self.logger)
                    for try await row in rows {
                        let (environment, eventKey) = try row.decode((String, String).self)
                        missing.append(CommittedEvent(environment: environment, eventKey: eventKey))
                    }
                    return missing
                }
            }
        } catch {
            throw StoreError.classify(error)
        }
    }
}

extension StoreStatements {
    /// The given events without their `notifications` row (by its primary key).
    enum MissingEvents: RowsStatement {
        static let columns: [RowColumn<CommittedEvent>] = [.init("environment", "text", \.environment), .init("event_key", "text", \.eventKey)]
        static func sql(rows: String) -> String {
            """
            SELECT r.environment, r.event_key FROM \(rows)
            WHERE NOT EXISTS (SELECT 1 FROM notifications n WHERE n.environment = r.environment AND n.event_key = r.event_key)
            """
        }
    }
}
