import AppStore
import Foundation
import GrantDecision
import Logging
import PostgresNIO

/// Grant's Postgres side: applies a batch of enriched events in one transaction, idempotently
/// (an event key applied before changes nothing) and order-safely (``GrantDecider`` keeps every
/// purchase's state monotonic), with the change history and the outbox rows — each change with the
/// next gap-free sequence number of its customer — in the same transaction.
///
/// The `PostgresClient` must run in the service group before anything calls the store.
public final class EntitlementStore: Sendable {
    public let client: PostgresClient
    let logger: Logger
    /// The longest one store operation may take before it counts as a transient failure (see
    /// ``StoreDeadline``): a connection that went silent when Postgres died must not stall the stage.
    public let operationTimeout: Duration

    public init(client: PostgresClient, logger: Logger, operationTimeout: Duration = .seconds(30)) {
        self.client = client
        self.logger = logger
        self.operationTimeout = operationTimeout
    }

    /// Applies `events` in order in one transaction. Returns each event's decision, or why it can
    /// never apply (nothing of that event is written; the others are).
    /// - Throws: ``StoreError`` when the transaction failed (nothing was written).
    public func apply(_ events: [GrantEvent], policy: GrantPolicy) async throws(StoreError) -> [Result<GrantDecision, GrantRejection>] {
        guard !events.isEmpty else { return [] }
        let decisions: [Result<GrantDecision, GrantRejection>]
        do {
            decisions = try await StoreDeadline.run(operationTimeout, "a batch of \(events.count) events") {
                try await self.client.withTransaction(logger: self.logger) { connection in
                    try await self.apply(events, policy: policy, on: connection)
                }
            }
        } catch {
            throw StoreError.classify(error)
        }
        // Committed: counted once here (a failed transaction counts nothing; its retry counts then).
        GrantMetrics.committed(decisions)
        return decisions
    }

    private func apply(_ events: [GrantEvent], policy: GrantPolicy, on connection: PostgresConnection) async throws -> [Result<GrantDecision, GrantRejection>] {
        let purchaseKeys = Set(events.compactMap(\.purchaseKey)).sorted()
        let keyJSON = try StoreRows.json(purchaseKeys.map { StoreRows.Key(e: $0.environment, k: $0.originalTransactionId) })
        let eventJSON = try StoreRows.json(events.map { StoreRows.Key(e: $0.environment, k: $0.eventKey) })
        if !purchaseKeys.isEmpty { try await run(StoreStatements.LockKeys.self, keyJSON, connection) }

        var batch = BatchState()
        for try await (env, key) in try await query(StoreStatements.LoadApplied.self, eventJSON, connection).decode((String, String).self) {
            batch.applied.insert(BatchState.appliedKey(env, key))
        }
        if !purchaseKeys.isEmpty { try await load(into: &batch, keyJSON: keyJSON, connection) }

        var results: [Result<GrantDecision, GrantRejection>] = []
        for event in events {
            do {
                let decision = try GrantDecider.decide(batch.snapshot(for: event), event: event, policy: policy)
                batch.record(decision, policy: policy)
                results.append(.success(decision))
            } catch {
                results.append(.failure(error))
            }
        }
        try await write(batch, policy: policy, connection)
        return results
    }

    private func load(into batch: inout BatchState, keyJSON: String, _ connection: PostgresConnection) async throws {
        for try await text in try await query(StoreStatements.LoadPurchases.self, keyJSON, connection).decode(String.self) {
            let state = try AppStoreJSON.decoder.decode(PurchaseState.self, from: Data(text.utf8))
            batch.purchases[state.key] = state
        }
        let rows = try await query(StoreStatements.LoadEntitlements.self, keyJSON, connection)
        for try await (env, customer, key, source, kind, product, active, from, until, reason) in rows.decode(
            (String, UUID, String, String, String, String, Bool, Date?, Date?, String).self
        ) {
            let grant = EntitlementGrant(
                id: .init(customer: CustomerKey(environment: env, customerId: customer), entitlementKey: key, sourceId: source),
                source: EntitlementSource(rawValue: kind) ?? .autoRenewable, productId: product, active: active,
                activeFrom: from, activeUntil: until, reason: reason)
            batch.entitlements[PurchaseKey(environment: env, originalTransactionId: source), default: []].append(grant)
        }
        let consumables = try await query(StoreStatements.LoadConsumables.self, keyJSON, connection)
        for try await (env, tid, customer, product, keys, quantity, purchased, revoked, reason, asOf, eventKey) in consumables.decode(
            (String, String, UUID?, String, [String], Int32, Date?, Date?, Int16?, Date, String).self
        ) {
            let key = PurchaseKey(environment: env, originalTransactionId: tid)
            batch.consumables[key] = ConsumableGrant(
                key: key, customer: customer.map { CustomerKey(environment: env, customerId: $0) }, productId: product,
                entitlementKeys: keys, quantity: Int(quantity), purchasedAt: purchased, revokedAt: revoked,
                revocationReason: reason.map(Int.init), version: EventVersion(asOf: asOf, eventKey: eventKey))
        }
    }

    private func write(_ batch: BatchState, policy: GrantPolicy, _ connection: PostgresConnection) async throws {
        if !batch.customers.isEmpty {
            let rows = batch.customers.sorted { $0.key < $1.key }.map {
                StoreRows.Customer(environment: $0.key.environment, customerId: $0.key.customerId, externalUserId: $0.value)
            }
            try await run(StoreStatements.UpsertCustomers.self, try StoreRows.json(rows), connection)
        }
        if !batch.transactions.isEmpty {
            let rows = batch.transactions.sorted { $0.key < $1.key }.map(\.value)
            try await run(StoreStatements.UpsertTransactions.self, try StoreRows.json(rows), connection)
        }
        if !batch.dirtyPurchases.isEmpty {
            let states = batch.dirtyPurchases.sorted().compactMap { batch.purchases[$0] }
            let rows = states.map { StoreRows.Purchase(state: $0, owner: $0.owner(policy: policy.transferPolicy)) }
            try await run(StoreStatements.UpsertPurchases.self, try StoreRows.json(rows), connection)
            let claims = states.flatMap { state -> [StoreRows.Claim] in
                let owner = state.owner(policy: policy.transferPolicy)
                return state.claims.map { claim in
                    StoreRows.Claim(
                        environment: state.key.environment, originalTransactionId: state.key.originalTransactionId,
                        customerId: claim.customerId, firstClaimedAt: claim.claimedAt, verified: claim.verified,
                        status: claim.customerId == owner ? "owner" : (policy.transferPolicy == .refuse ? "refused" : "superseded"),
                        causeEventKey: claim.eventKey)
                }
            }
            if !claims.isEmpty { try await run(StoreStatements.UpsertClaims.self, try StoreRows.json(claims), connection) }
        }
        let writes = batch.entitlementWrites.sorted { $0.key < $1.key }
        let deletions = writes.filter { $0.value == nil }.map {
            StoreRows.EntitlementID(environment: $0.key.customer.environment, customerId: $0.key.customer.customerId,
                                    entitlementKey: $0.key.entitlementKey, sourceId: $0.key.sourceId)
        }
        let upserts = writes.compactMap { $0.value.map(StoreRows.Entitlement.init) }
        if !deletions.isEmpty { try await run(StoreStatements.DeleteEntitlements.self, try StoreRows.json(deletions), connection) }
        if !upserts.isEmpty { try await run(StoreStatements.UpsertEntitlements.self, try StoreRows.json(upserts), connection) }
        if !batch.dirtyConsumables.isEmpty {
            let rows = batch.dirtyConsumables.sorted().compactMap { batch.consumables[$0] }.map { c in
                StoreRows.Consumable(
                    environment: c.key.environment, transactionId: c.transactionId, customerId: c.customer?.customerId,
                    productId: c.productId, entitlementKeys: c.entitlementKeys, quantity: c.quantity, purchasedAt: c.purchasedAt,
                    revokedAt: c.revokedAt, revocationReason: c.revocationReason, asOf: c.version.asOf, eventKey: c.version.eventKey)
            }
            try await run(StoreStatements.UpsertConsumables.self, try StoreRows.json(rows), connection)
        }
        if !batch.notifications.isEmpty { try await run(StoreStatements.InsertNotifications.self, try StoreRows.json(batch.notifications), connection) }
        if !batch.consumptionRequests.isEmpty {
            try await run(StoreStatements.InsertConsumptionRequests.self, try StoreRows.json(batch.consumptionRequests), connection)
        }
        if !batch.changes.isEmpty { try await writeChanges(batch.changes, connection) }
    }

    /// Numbers the changes per customer from the customers' locked counters, then writes the
    /// history, the outbox and the new counters: a rollback takes all of it back, so no number is
    /// ever skipped or reused.
    private func writeChanges(_ changes: [EntitlementChange], _ connection: PostgresConnection) async throws {
        let customers = Set(changes.map(\.customer)).sorted()
        let keys = try StoreRows.json(customers.map { StoreRows.Key(e: $0.environment, k: $0.customerId.uuidString) })
        var next: [CustomerKey: Int64] = [:]
        for try await (env, id, seq) in try await query(StoreStatements.LockSequences.self, keys, connection).decode((String, UUID, Int64).self) {
            next[CustomerKey(environment: env, customerId: id)] = seq
        }
        var rows: [StoreRows.Change] = []
        for change in changes {
            guard let seq = next[change.customer] else {
                throw StoreError(code: "store.customer_missing", message: "a changed customer has no row", isTransient: false)
            }
            next[change.customer] = seq + 1
            let c = change.cause
            rows.append(StoreRows.Change(
                environment: change.customer.environment, customerId: change.customer.customerId, seq: seq,
                entitlementKey: change.entitlementKey, sourceId: change.sourceId, productId: change.productId,
                change: change.kind.rawValue, active: change.active, activeUntil: change.activeUntil, reason: change.reason,
                quantity: change.quantity, causeEventKey: c.eventKey, causeType: c.type, causeSubtype: c.subtype,
                causeLookup: c.lookup, causeAsOf: c.asOf, causeSignedDate: c.signedDate, body: ChangeEvent(change, seq: seq)))
        }
        let json = try StoreRows.json(rows)
        try await run(StoreStatements.InsertChanges.self, json, connection)
        try await run(StoreStatements.InsertOutbox.self, json, connection)
        let counters = next.sorted { $0.key < $1.key }.map { StoreRows.SeqAllocation(environment: $0.key.environment, customerId: $0.key.customerId, nextSeq: $0.value) }
        try await run(StoreStatements.UpdateSequences.self, try StoreRows.json(counters), connection)
    }

    private func query<S: BatchStatement>(
        _ statement: S.Type, _ json: String, _ connection: PostgresConnection
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow> {
        try await connection.execute(statement, json, logger: logger)
    }

    private func run<S: BatchStatement>(_ statement: S.Type, _ json: String, _ connection: PostgresConnection) async throws {
        for try await _ in try await query(statement, json, connection) {}
    }
}
