import AppStore
import Foundation
import PipelineRecords

/// The pure decision at grant's heart: (what is known about a purchase, one enriched event) →
/// (new state, entitlement changes). No I/O and no clock: the same inputs always give the same
/// output, which is what makes replays and reorderings converge.
///
/// The rules, in order:
/// 1. An event applied before (same event key) changes nothing.
/// 2. Events that never change entitlements (TEST, REFUND_DECLINED, CONSUMPTION_REQUEST,
///    summaries, consent, external purchase tokens, types or subtypes this version does not know)
///    are recorded only; a rescinded consent whose customer is known is also told downstream
///    (``EntitlementChange/Kind/consentRescinded``).
/// 3. The customer the event names joins the purchase's claims; the owner follows from the claims
///    (``OwnershipClaim``: Apple's newest signed token; where Apple names nobody, the uploads'
///    claims by when they were received, under the transfer policy).
/// 4. The event's facts replace the purchase's state only when they are newer (``EventVersion``);
///    an older event cannot move the state backwards.
/// 5. The entitlement rows are recomputed from the state and compared with the stored ones; every
///    difference that changes access is a change with the event as its cause.
public enum GrantDecider {
    public static func decide(_ snapshot: GrantSnapshot, event: GrantEvent, policy: GrantPolicy) throws(GrantRejection) -> GrantDecision {
        var decision = try decideEvent(snapshot, event: event, policy: policy)
        // Ignored upload hints are recorded with the event, so support can see why a claim did not count.
        if decision.outcome != .duplicate, let refusal = event.uploadHintsRefusal {
            decision.note = [refusal, decision.note].compactMap { $0 }.joined(separator: "; ")
        }
        return decision
    }

    private static func decideEvent(_ snapshot: GrantSnapshot, event: GrantEvent, policy: GrantPolicy) throws(GrantRejection) -> GrantDecision {
        if snapshot.alreadyApplied { return GrantDecision(outcome: .duplicate, event: event, note: "already applied") }
        if let reason = event.recordOnlyReason {
            return GrantDecision(outcome: .recorded, event: event, changes: event.consentChanges, note: reason)
        }
        guard let key = event.purchaseKey, let tx = event.transaction else {
            guard event.kind == .notification, event.notificationType == .renewalExtension else {
                throw GrantRejection.missingPurchase("carries no transaction naming it")
            }
            return GrantDecision(outcome: .recorded, event: event, note: "renewal-extension event without a purchase")
        }
        let productType = tx.type ?? (event.renewalInfo != nil ? .autoRenewableSubscription : .unknown(""))
        guard productType.isKnown else {
            return GrantDecision(
                outcome: .recorded, event: event, note: "product type \(productType.rawValue) is not known to this version; recorded without change")
        }
        if productType == .consumable {
            return try ConsumableDecision.decide(snapshot.consumable, event: event, key: key, policy: policy)
        }
        return try decidePurchase(snapshot, event: event, key: key, productType: productType, policy: policy)
    }

    private static func decidePurchase(
        _ snapshot: GrantSnapshot, event: GrantEvent, key: PurchaseKey, productType: ProductType, policy: GrantPolicy
    ) throws(GrantRejection) -> GrantDecision {
        let previous = snapshot.purchase
        var claims = previous?.claims ?? []
        if let claim = event.claim {
            // Apple's word ranks by the moment it describes; an upload's by when the pipeline took it in.
            let at = claim.verified ? event.version.asOf : event.ingestedAt ?? event.verifiedAt
            claims = OwnershipClaim.merge(
                claims, OwnershipClaim(customerId: claim.customerId, claimedAt: at, verified: claim.verified, eventKey: event.eventKey))
        }
        var state: PurchaseState
        let newer = previous.map { event.version > $0.version } ?? true
        if newer {
            state = try PurchaseDerivation.state(for: event, key: key, productType: productType, previous: previous, policy: policy)
        } else {
            state = previous!
        }
        state.claims = claims
        state.lastSignedDate = [previous?.lastSignedDate, event.signedDate].compactMap { $0 }.max()

        let owner = state.owner(policy: policy.transferPolicy)
        let desired = try EntitlementPlanner.desired(for: state, policy: policy, suspended: snapshot.suspendedCustomers)
        let (upserts, deletions, changes) = EntitlementPlanner.diff(
            existing: snapshot.entitlements, desired: desired, owner: owner, cause: event.cause)

        var refused: [UUID] = []
        var notes: [String] = []
        if let claim = event.claim, claim.customerId != owner, let owner {
            refused.append(claim.customerId)
            let named = claim.customerId.uuidString.lowercased()
            if claim.verified {
                notes.append("Apple's older token for customer \(named) superseded: Apple names \(owner.uuidString.lowercased()) since")
            } else if state.claims.contains(where: \.verified) {
                notes.append("upload's claim by customer \(named) refused: Apple's signed token names another customer")
            } else {
                notes.append(
                    "upload's claim by customer \(named) refused: the purchase belongs to another customer (policy \(policy.transferPolicy.rawValue))"
                )
            }
        }
        if let before = previous?.owner(policy: policy.transferPolicy), let owner, before != owner {
            notes.append(
                "owner changed from \(before.uuidString.lowercased()) to \(owner.uuidString.lowercased()) (\(state.claims.first { $0.customerId == owner }?.verified == true ? "Apple's newer token" : "policy \(policy.transferPolicy.rawValue)"))"
            )
        }
        if owner == nil { notes.append("no customer named yet: nothing granted") }
        if newer, let tx = event.transaction, tx.revocationDate != nil, !policy.revokes(tx) {
            notes.append("prorated refund (\(tx.revocationPercentage.map { "\($0 / 1000) %" } ?? "share not given")): access kept by policy")
        }
        if !newer { notes.append("older than the applied state (\(previous!.version.eventKey)); state kept") }
        return GrantDecision(
            outcome: newer || !changes.isEmpty ? .applied : .stale, event: event, purchase: state,
            entitlements: upserts, deletions: deletions, changes: changes, refusedClaims: refused,
            note: notes.isEmpty ? nil : notes.joined(separator: "; "))
    }
}

/// Consumables: each transaction is its own purchase, granted from the transaction itself (they
/// never appear in history). A refund takes its whole quantity, a prorated refund
/// (`REFUND_PRORATED`) the refunded share of it (``refundedQuantity(of:)``), and a reversed refund
/// (Apple's transaction without `revocationDate` again) gives back what the refund took.
enum ConsumableDecision {
    static func decide(_ existing: ConsumableGrant?, event: GrantEvent, key: PurchaseKey, policy: GrantPolicy) throws(GrantRejection) -> GrantDecision
    {
        guard let tx = event.transaction, let productId = tx.productId, !productId.isEmpty else {
            throw GrantRejection.missingPurchase("its consumable transaction has no productId")
        }
        if let existing, event.version <= existing.version {
            return GrantDecision(
                outcome: .stale, event: event, consumable: existing, note: "older than the applied state (\(existing.version.eventKey)); state kept")
        }
        // The first named customer keeps a consumable; it cannot be claimed by another.
        let customer = existing?.customer ?? event.claim.map { CustomerKey(environment: key.environment, customerId: $0.customerId) }
        let bought = Int(tx.quantity ?? 1)
        let refunded = refundedQuantity(of: tx)
        // Wholly refunded: revoked with its quantity as bought; partly: delivered with what remains.
        let whole = refunded >= bought
        let grant = ConsumableGrant(
            key: key, customer: customer, productId: productId, entitlementKeys: policy.catalog.entitlements(for: productId),
            quantity: whole ? bought : bought - refunded, purchasedAt: tx.purchaseDate, revokedAt: whole ? tx.revocationDate : nil,
            revocationReason: tx.revocationReason?.rawValue, version: event.version)
        var changes: [EntitlementChange] = []
        let was = existing?.isGranted ?? false
        let kind: EntitlementChange.Kind? =
            switch (was, grant.isGranted) {
            case (false, true): .consumableGranted
            case (true, false): .consumableRevoked
            case (true, true) where existing?.quantity != grant.quantity: .consumableAdjusted
            default: nil
            }
        if let customer, let kind {
            let reason =
                switch kind {
                case .consumableRevoked: "refunded"
                case .consumableAdjusted where refunded > 0: "partially_refunded"
                default: "delivered"
                }
            for entitlementKey in grant.entitlementKeys {
                changes.append(
                    EntitlementChange(
                        kind: kind, customer: customer, entitlementKey: entitlementKey, sourceId: key.purchaseId, productId: productId,
                        active: grant.isGranted, activeUntil: nil, reason: reason, quantity: grant.quantity, cause: event.cause))
            }
        }
        var notes: [String] = []
        if customer == nil { notes.append("no customer named: consumable recorded, not delivered") }
        if let claim = event.claim, let customer, claim.customerId != customer.customerId {
            notes.append("claim by customer \(claim.customerId.uuidString.lowercased()) refused: the consumable was delivered to another customer")
        }
        if refunded > 0, !whole { notes.append("prorated refund: \(refunded) of \(bought) taken, \(bought - refunded) kept") }
        return GrantDecision(
            outcome: .applied, event: event, consumable: grant, changes: changes, note: notes.isEmpty ? nil : notes.joined(separator: "; "))
    }

    /// How much of a consumable's quantity its refund takes: all of it for a full refund (or one that
    /// does not say), and for a prorated one `revocationPercentage` (milliunits: 100000 is 100 %) of
    /// it rounded to the nearest unit, halves taken.
    static func refundedQuantity(of tx: JWSTransactionDecodedPayload) -> Int {
        guard tx.revocationDate != nil else { return 0 }
        let bought = Int(tx.quantity ?? 1)
        guard tx.revocationType == .refundProrated, let share = tx.revocationPercentage, (0...100_000).contains(share) else { return bought }
        return (bought * Int(share) + 50_000) / 100_000
    }
}

extension GrantDecider {
    /// A stored purchase's rows planned again from its unchanged state, for a customer whose access
    /// was suspended (or not) since they were written: the rows to write and delete and the
    /// changes, with `cause` (the `RESCIND_CONSENT`) as their cause.
    public static func replan(
        _ state: PurchaseState, entitlements: [EntitlementGrant], suspendedCustomers: Set<UUID>, cause: GrantCause, policy: GrantPolicy
    ) throws(GrantRejection) -> (upserts: [EntitlementGrant], deletions: [EntitlementGrant.ID], changes: [EntitlementChange]) {
        let desired = try EntitlementPlanner.desired(for: state, policy: policy, suspended: suspendedCustomers)
        return EntitlementPlanner.diff(
            existing: entitlements, desired: desired, owner: state.owner(policy: policy.transferPolicy), cause: cause)
    }
}
