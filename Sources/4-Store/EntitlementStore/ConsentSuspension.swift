import Foundation
import GrantDecision
import PipelineRecords
import PostgresNIO

/// ``GrantPolicy/RescindedConsentPolicy/suspend``: a customer whose `RESCIND_CONSENT` was attributed
/// (``BatchState/attributeConsentRescinds()``, or at once when known) loses every active
/// entitlement, with the rescind as cause, and gets none back later whatever Apple says of their
/// purchases: a suspended owner's rows are planned inactive (reason `consent_rescinded`). Consumable
/// balances are kept. Apple sends nothing when consent is given again; an operator who lifts a
/// suspension deletes the customer's `consent_rescinds` rows, and their next events grant again.
/// Under the default policy (`notify`) none of this runs: no query, no change to access.
extension EntitlementStore {
    /// Reads which customers the batch may decide for (the claimants of its purchases, its
    /// consumables' owners, the customers its events name) are suspended already.
    func loadSuspendedCustomers(_ events: [GrantEvent], into batch: inout BatchState, _ connection: PostgresConnection) async throws {
        var candidates: Set<UUID> = []
        for state in batch.purchases.values { candidates.formUnion(state.claims.map(\.customerId)) }
        for grant in batch.consumables.values { if let customer = grant.customer { candidates.insert(customer.customerId) } }
        for event in events {
            if let customer = event.claim?.customerId { candidates.insert(customer) }
            if let customer = event.appTransactionCustomer { candidates.insert(customer) }
        }
        guard !candidates.isEmpty else { return }
        let rows = try await connection.query(
            "SELECT DISTINCT environment, customer_id FROM consent_rescinds WHERE customer_id = ANY(\(candidates.sorted { $0.uuidString < $1.uuidString }))",
            logger: logger)
        for try await (environment, customer) in rows.decode((String, UUID).self) {
            batch.suspended.insert(CustomerKey(environment: environment, customerId: customer))
        }
    }

    /// Suspends the customers this batch's rescinds were attributed to: every purchase they own is
    /// planned again (those the batch does not hold are locked and loaded first, by `grant_load`),
    /// so each active entitlement ends with a `revoked` change after the `consent_rescinded` one.
    func suspendRescinded(_ batch: inout BatchState, policy: GrantPolicy, _ connection: PostgresConnection) async throws {
        var causes: [CustomerKey: GrantCause] = [:]
        for change in batch.changes where change.kind == .consentRescinded && !batch.suspended.contains(change.customer) {
            if causes[change.customer] == nil { causes[change.customer] = change.cause }
        }
        guard !causes.isEmpty else { return }
        batch.suspended.formUnion(causes.keys)

        // Their purchases the batch does not hold: those with an entitlement row of theirs.
        var missing: Set<PurchaseKey> = []
        for customer in causes.keys.sorted() {
            let rows = try await connection.query(
                """
                SELECT DISTINCT source_id FROM entitlements
                WHERE environment = \(customer.environment) AND customer_id = \(customer.customerId)
                """, logger: logger)
            for try await sourceId in rows.decode(String.self) {
                let key = PurchaseKey(environment: customer.environment, purchaseId: sourceId)
                if batch.purchases[key] == nil { missing.insert(key) }
            }
        }
        if !missing.isEmpty {
            let keys = missing.sorted()
            try await load(GrantLoadArguments(purchases: keys, eventKeyPrefix: "consent-suspension:"), into: &batch, connection)
        }

        for key in batch.purchases.keys.sorted() {
            guard let state = batch.purchases[key], let owner = state.owner(policy: policy.transferPolicy),
                let cause = causes[CustomerKey(environment: key.environment, customerId: owner)]
            else { continue }
            // A stored state planned when it was written; only a catalogue changed since could
            // refuse it now, and then its rows stay as they are.
            guard
                let (upserts, deletions, changes) = try? GrantDecider.replan(
                    state, entitlements: batch.entitlements[key] ?? [], suspendedCustomers: batch.suspendedCustomers(of: key.environment),
                    cause: cause, policy: policy)
            else { continue }
            batch.write(key, upserts: upserts, deletions: deletions)
            batch.add(changes)
        }
    }
}
