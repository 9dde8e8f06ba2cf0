import Foundation
import GrantDecision
import Logging
import PipelineRecords
import PostgresNIO

/// One committed, not yet published change event.
public struct OutboxEntry: Hashable, Sendable {
    /// Whom the event is about.
    public enum Subject: Hashable, Sendable {
        /// A customer's change, numbered `seq` in the customer's stream (the `outbox` table).
        case customer(UUID, seq: Int64)
        /// An `EXTERNAL_PURCHASE_TOKEN`, which names no customer (the `external_purchase_tokens` table).
        case externalPurchase(id: String, eventKey: String)
    }

    public var environment: String
    public var subject: Subject
    /// The JSON body, as published.
    public var body: String
    /// The W3C `traceparent` of grant's span for the record that caused the change (migration 0022),
    /// so its publication continues that trace; nil when that record was not traced.
    public var traceContext: String?

    public init(environment: String, subject: Subject, body: String, traceContext: String? = nil) {
        self.environment = environment
        self.subject = subject
        self.body = body
        self.traceContext = traceContext
    }

    /// The record key on the changes topic: `<environment>:<customerId>`, so one customer's
    /// changes stay in order on one partition, or `<environment>:external-purchase:<externalPurchaseId>`.
    public var key: String {
        switch subject {
        case .customer(let customerId, _): "\(environment):\(customerId.uuidString.lowercased())"
        case .externalPurchase(let id, _): ExternalPurchaseTokenEvent.key(environment: environment, externalPurchaseId: id)
        }
    }
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
            // elsewhere (locked false) or nothing waits. External purchase tokens (almost always
            // none) come from their own table, found through its partial index.
            let pending = try await connection.query(
                """
                SELECT l.locked, o.environment, o.customer_id, o.seq, o.external_id, o.event_key, o.body, o.trace_context
                FROM (SELECT pg_try_advisory_xact_lock(\(Self.outboxLockKey)) AS locked) AS l
                LEFT JOIN LATERAL (
                    (SELECT environment, customer_id, seq, NULL::text AS external_id, NULL::text AS event_key, body, trace_context
                     FROM outbox WHERE l.locked AND published_at IS NULL
                     ORDER BY environment, customer_id, seq LIMIT \(limit))
                    UNION ALL
                    (SELECT environment, NULL::uuid, NULL::bigint, external_purchase_id, event_key, body, NULL::text
                     FROM external_purchase_tokens WHERE l.locked AND published_at IS NULL
                     ORDER BY recorded_at LIMIT \(limit))
                ) AS o ON true
                """, logger: logger)
            var locked = false
            var entries: [OutboxEntry] = []
            for try await (held, env, customer, seq, externalId, eventKey, body, trace) in pending.decode(
                (Bool, String?, UUID?, Int64?, String?, String?, String?, String?).self)
            {
                locked = held
                guard let env, let body else { continue }
                if let customer, let seq {
                    entries.append(OutboxEntry(environment: env, subject: .customer(customer, seq: seq), body: body, traceContext: trace))
                } else if let externalId, let eventKey {
                    entries.append(OutboxEntry(environment: env, subject: .externalPurchase(id: externalId, eventKey: eventKey), body: body))
                }
            }
            guard locked else { return nil }
            guard !entries.isEmpty else { return 0 }
            try await publish(entries)
            var published: [StoreRows.PublishedChange] = []
            var tokens: [StoreRows.PublishedToken] = []
            for entry in entries {
                switch entry.subject {
                case .customer(let customerId, let seq):
                    published.append(StoreRows.PublishedChange(environment: entry.environment, customerId: customerId, seq: seq))
                case .externalPurchase(_, let eventKey):
                    tokens.append(StoreRows.PublishedToken(environment: entry.environment, eventKey: eventKey))
                }
            }
            if !published.isEmpty {
                try await connection.run(StoreStatements.DeletePublished.self, published, logger: logger)
            }
            if !tokens.isEmpty {
                try await connection.run(StoreStatements.MarkExternalPurchaseTokensPublished.self, tokens, logger: logger)
            }
            return entries.count
        }
    }

    /// The outbox backlog: unpublished rows and the age of the oldest (the outbox holds nothing
    /// else, migration 0010), external purchase tokens included (migration 0019).
    public func outboxBacklog() async throws(StoreError) -> PendingOutbox {
        do {
            return try await StoreDeadline.run(operationTimeout, "reading the outbox backlog") {
                let rows = try await self.client.query(
                    """
                    SELECT count(*), min(created_at), coalesce(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at))::float8, 0)
                    FROM (SELECT created_at FROM outbox WHERE published_at IS NULL
                          UNION ALL SELECT recorded_at FROM external_purchase_tokens WHERE published_at IS NULL) AS waiting
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
        let rows = catalog.products.sorted { $0.key < $1.key }.flatMap { id, product in
            product.entitlements.sorted().map {
                StoreRows.ProductEntitlement(productId: id, entitlementKey: $0, durationDays: product.durationDays.map { Int32(clamping: $0) })
            }
        }
        do {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("DELETE FROM product_entitlements", logger: logger)
                try await connection.run(StoreStatements.InsertProducts.self, rows, logger: logger)
            }
        } catch {
            throw StoreError.classify(error)
        }
    }
}
