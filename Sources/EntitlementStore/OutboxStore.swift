import Foundation
import GrantDecision
import Logging
import PostgresNIO

/// One committed, not yet published change event.
public struct OutboxEntry: Hashable, Sendable {
    public var environment: String
    public var customerId: UUID
    public var seq: Int64
    /// The JSON body, as published.
    public var body: String

    /// The record key on the changes topic: `<environment>:<customerId>`, so one customer's
    /// changes stay in order on one partition.
    public var key: String { "\(environment):\(customerId.uuidString.lowercased())" }
}

extension EntitlementStore {
    /// An arbitrary constant naming the publisher lock ("grant-outbox").
    static let outboxLockKey: Int64 = 0x6f75_7462_6f78_0001

    /// Hands the oldest unpublished outbox rows (per customer in sequence order) to `publish`, and
    /// deletes them when it returns (the outbox keeps only what waits; `entitlement_changes` keeps
    /// the history); if it throws, nothing is deleted and they are handed out again. One publisher at a time across every replica (a transaction-scoped advisory lock),
    /// so a customer's events are never published out of order. Returns how many were published,
    /// or nil when another replica holds the lock.
    public func publishOutbox(limit: Int, _ publish: @Sendable @escaping ([OutboxEntry]) async throws -> Void) async throws(StoreError) -> Int? {
        do {
            return try await StoreDeadline.run(operationTimeout, "an outbox round") {
                try await self.publishOutboxRound(limit: limit, publish)
            }
        } catch {
            throw StoreError.classify(error)
        }
    }

    private func publishOutboxRound(limit: Int, _ publish: @Sendable ([OutboxEntry]) async throws -> Void) async throws -> Int? {
        try await client.withTransaction(logger: logger) { connection -> Int? in
            // The lock and the rows in one statement: one row with nulls when the lock is taken
            // elsewhere (locked false) or nothing waits.
            let pending = try await connection.query(
                """
                SELECT l.locked, o.environment, o.customer_id, o.seq, o.body::text
                FROM (SELECT pg_try_advisory_xact_lock(\(Self.outboxLockKey)) AS locked) AS l
                LEFT JOIN LATERAL (
                    SELECT environment, customer_id, seq, body FROM outbox WHERE l.locked AND published_at IS NULL
                    ORDER BY environment, customer_id, seq LIMIT \(limit)
                ) AS o ON true
                """, logger: logger)
            var locked = false
            var entries: [OutboxEntry] = []
            for try await (held, env, customer, seq, body) in pending.decode((Bool, String?, UUID?, Int64?, String?).self) {
                locked = held
                if let env, let customer, let seq, let body {
                    entries.append(OutboxEntry(environment: env, customerId: customer, seq: seq, body: body))
                }
            }
            guard locked else { return nil }
            guard !entries.isEmpty else { return 0 }
            try await publish(entries)
            let keys = try StoreRows.json(
                entries.map { StoreRows.SeqAllocation(environment: $0.environment, customerId: $0.customerId, nextSeq: $0.seq) })
            for try await _ in try await connection.execute(StoreStatements.DeletePublished.self, keys, logger: logger) {}
            return entries.count
        }
    }

    /// The outbox backlog: unpublished rows and the age of the oldest (the outbox holds nothing
    /// else, migration 0010).
    public func outboxBacklog() async throws(StoreError) -> PendingOutbox {
        do {
            return try await StoreDeadline.run(operationTimeout, "reading the outbox backlog") {
                let rows = try await self.client.query(
                    """
                    SELECT count(*), min(created_at), coalesce(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at))::float8, 0)
                    FROM outbox WHERE published_at IS NULL
                    """, logger: self.logger)
                var backlog = PendingOutbox(unpublishedRows: 0, oldestAgeSeconds: 0)
                for try await (count, oldest, age) in rows.decode((Int64, Date?, Double).self) {
                    backlog = PendingOutbox(unpublishedRows: Int(count), oldestCreatedAt: oldest, oldestAgeSeconds: max(0, age))
                }
                return backlog
            }
        } catch {
            throw StoreError.classify(error)
        }
    }

    /// Replaces the product → entitlement mapping table with `catalog` (grant's start-up sync).
    public func syncProducts(_ catalog: ProductCatalog) async throws(StoreError) {
        struct Row: Encodable {
            var productId: String
            var entitlementKey: String
            var durationDays: Int?
        }
        let rows = catalog.products.sorted { $0.key < $1.key }.flatMap { id, product in
            product.entitlements.sorted().map { Row(productId: id, entitlementKey: $0, durationDays: product.durationDays) }
        }
        do {
            let json = try StoreRows.json(rows)
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("DELETE FROM product_entitlements", logger: logger)
                var bindings = PostgresBindings()
                bindings.append(json)
                try await connection.query(PostgresQuery(unsafeSQL: StoreStatements.insertProducts, binds: bindings), logger: logger)
            }
        } catch {
            throw StoreError.classify(error)
        }
    }
}
