import AppStore
import Foundation
import GrantDecision
import Logging
import PipelineRecords
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

    /// Two statements, whatever the batch's size: `grant_load` (locks and reads), then the
    /// decisions in memory, then `grant_write` with only the rows they changed, as typed columns
    /// (``GrantWriteColumns``, schemas/migrations/functions).
    private func apply(
        _ events: [GrantEvent], policy: GrantPolicy, on connection: PostgresConnection
    ) async throws -> [Result<GrantDecision, GrantRejection>] {
        var batch = BatchState()
        try await load(events, into: &batch, connection)
        let events = try await withAppTransactionCustomers(events, connection)
        if policy.rescindedConsent == .suspend { try await loadSuspendedCustomers(events, into: &batch, connection) }

        var results: [Result<GrantDecision, GrantRejection>] = []
        results.reserveCapacity(events.count)
        for event in events {
            do {
                let decision = try GrantDecider.decide(batch.snapshot(for: event), event: event, policy: policy)
                batch.record(decision, policy: policy)
                results.append(.success(decision))
            } catch {
                results.append(.failure(error))
            }
        }
        batch.attributeConsentRescinds()
        if policy.rescindedConsent == .suspend { try await suspendRescinded(&batch, policy: policy, connection) }
        let columns = try GrantWriteColumns(batch, policy: policy)
        if !columns.isEmpty {
            // grant_write answers how many changes it numbered: fewer means a customer row was missing.
            let changes = batch.changes.count
            for try await count in try await connection.execute(GrantWriteStatement(columns: columns), logger: logger) where count != changes {
                throw StoreError(code: .customerMissing, message: "a changed customer has no row", isTransient: false)
            }
        }
        // Rare (a mass extension's reports), so a statement of their own rather than grant_write's.
        if !batch.massExtensionReports.isEmpty {
            try await connection.run(StoreStatements.RecordMassExtensions.self, batch.massExtensionReports, logger: logger)
        }
        if !batch.consentRescinds.isEmpty {
            try await connection.run(StoreStatements.RecordConsentRescinds.self, batch.consentRescinds, logger: logger)
        }
        if !batch.externalPurchaseTokens.isEmpty {
            try await connection.run(StoreStatements.RecordExternalPurchaseTokens.self, batch.externalPurchaseTokens, logger: logger)
        }
        return results
    }

    /// Locks the batch's purchases and reads what the decisions need: which events were applied,
    /// and for the events not applied yet their purchases' state, entitlement rows and consumable
    /// grants, and the `signedDate` of every stored transaction they carry.
    private func load(_ events: [GrantEvent], into batch: inout BatchState, _ connection: PostgresConnection) async throws {
        try await load(GrantLoadArguments(events), into: &batch, connection)
    }

    /// Runs `grant_load` and folds its rows into `batch`, each column read by its name.
    func load(_ arguments: GrantLoadArguments, into batch: inout BatchState, _ connection: PostgresConnection) async throws {
        for try await row in try await connection.execute(GrantLoadStatement(arguments: arguments), logger: logger) {
            let cells = row.makeRandomAccess()
            let env = try cells["env"].decode(String.self)
            let id = try cells["id"].decode(String.self)
            switch try cells["row_kind"].decode(String.self) {
            case "a":
                batch.applied.insert(BatchState.appliedKey(env, id))
            case "p":
                let text = try cells["purchase_state"].decode(String.self)
                let state = try AppStoreJSON.decode(PurchaseState.self, from: Array(text.utf8))
                batch.purchases[state.key] = state
                batch.storedPurchases[state.key] = state
            case "e":
                let grant = EntitlementGrant(
                    id: .init(
                        customer: CustomerKey(environment: env, customerId: try cells["customer"].decode(UUID.self)),
                        entitlementKey: try cells["ent_key"].decode(String.self), sourceId: id),
                    source: EntitlementSource(rawValue: try cells["src_kind"].decode(String.self)) ?? .autoRenewable,
                    productId: try cells["product"].decode(String.self), active: try cells["is_active"].decode(Bool.self),
                    activeFrom: try cells["active_from_at"].decode(Date?.self), activeUntil: try cells["active_until_at"].decode(Date?.self),
                    reason: try cells["why"].decode(String.self))
                batch.entitlements[PurchaseKey(environment: env, purchaseId: id), default: []].append(grant)
            case "c":
                let key = PurchaseKey(environment: env, purchaseId: id)
                batch.consumables[key] = ConsumableGrant(
                    key: key, customer: try cells["customer"].decode(UUID?.self).map { CustomerKey(environment: env, customerId: $0) },
                    productId: try cells["product"].decode(String.self), entitlementKeys: try cells["ent_keys"].decode([String].self),
                    quantity: Int(try cells["qty"].decode(Int32.self)), purchasedAt: try cells["active_from_at"].decode(Date?.self),
                    revokedAt: try cells["active_until_at"].decode(Date?.self),
                    revocationReason: try cells["rev_reason"].decode(Int16?.self).map(Int.init),
                    version: EventVersion(asOf: try cells["as_of_at"].decode(Date.self), eventKey: try cells["state_key"].decode(String.self)))
            case "r":
                let rescind = StoreRows.ConsentRescind(
                    environment: env, appTransactionId: id, eventKey: try cells["state_key"].decode(String.self),
                    notificationUUID: try cells["notification"].decode(String?.self), subtype: try cells["sub"].decode(String?.self),
                    lookup: try cells["how"].decode(String.self), asOf: try cells["as_of_at"].decode(Date.self),
                    signedDate: try cells["signed_at"].decode(Date?.self), customerId: nil)
                batch.waitingRescinds[rescind.key, default: []].append(rescind)
            case "t":
                batch.storedTransactions[BatchState.transactionKey(env, id)] = .some(try cells["signed_ms"].decode(Double?.self))
            case let other:
                throw StoreError(code: .unexpectedRow, message: "grant_load returned a row of unknown kind \(other)", isTransient: false)
            }
        }
    }

    /// The events that name only an app transaction (`RESCIND_CONSENT`), with its customer filled in:
    /// the owner of the newest purchase whose Apple-signed transactions carry that
    /// `appTransactionId` (stored in `transactions.app_transaction_id`), as committed before this batch.
    private func withAppTransactionCustomers(_ events: [GrantEvent], _ connection: PostgresConnection) async throws -> [GrantEvent] {
        let wanted = events.filter { $0.purchaseKey == nil && $0.appTransactionId != nil }
        guard !wanted.isEmpty else { return events }
        var customers: [String: UUID] = [:]
        for environment in Set(wanted.map(\.environment)) {
            let ids = Array(Set(wanted.filter { $0.environment == environment }.compactMap(\.appTransactionId)))
            for (id, customer) in try await Self.appTransactionCustomers(ids, environment: environment, connection, logger: logger) {
                customers["\(environment)\u{0}\(id)"] = customer
            }
        }
        return events.map { event in
            guard event.purchaseKey == nil, let id = event.appTransactionId else { return event }
            var found = event
            found.appTransactionCustomer = customers["\(event.environment)\u{0}\(id)"]
            return found
        }
    }

    /// `appTransactionId` → the customer owning the newest purchase (or consumable) that carries it.
    static func appTransactionCustomers(
        _ ids: [String], environment: String, _ connection: PostgresConnection, logger: Logger
    ) async throws -> [String: UUID] {
        let rows = try await connection.query(
            """
            SELECT DISTINCT ON (t.app_transaction_id) t.app_transaction_id, coalesce(c.customer_id, g.customer_id)
            FROM transactions t
            LEFT JOIN ownership_claims c ON c.environment = t.environment AND c.original_transaction_id = t.original_transaction_id
                AND c.status = 'owner'
            LEFT JOIN consumable_grants g ON g.environment = t.environment AND g.transaction_id = t.transaction_id
            WHERE t.environment = \(environment) AND t.app_transaction_id = ANY(\(ids))
              AND coalesce(c.customer_id, g.customer_id) IS NOT NULL
            ORDER BY t.app_transaction_id, t.purchase_date DESC NULLS LAST
            """, logger: logger)
        var found: [String: UUID] = [:]
        for try await (id, customer) in rows.decode((String, UUID).self) { found[id] = customer }
        return found
    }

    /// The `ownership_claims` rows of a purchase's state: one per claim, with its status under `policy`.
    static func claimRows(_ state: PurchaseState, policy: GrantPolicy) -> [StoreRows.Claim] {
        state.claims.map { claim in
            StoreRows.Claim(
                environment: state.key.environment, originalTransactionId: state.key.purchaseId,
                customerId: claim.customerId, firstClaimedAt: claim.first.at, verified: claim.verified,
                status: state.status(of: claim, policy: policy.transferPolicy).rawValue, causeEventKey: claim.first.eventKey)
        }
    }
}
