import AppStore
import Foundation
import PipelineRecords

/// Turns a purchase's state into the entitlement rows it should produce, and compares them with the
/// rows it produced before. The rows are a function of the state alone (owner, product, lifecycle,
/// dates), so whatever order the events came in, the same final state gives the same rows.
enum EntitlementPlanner {
    /// The reason of the rows of a customer whose access a rescinded consent suspended.
    static let consentSuspendedReason = "consent_rescinded"

    /// The rows the purchase should have: one per entitlement key of its product, for its owner.
    /// A suspended owner's rows are all inactive (``consentSuspendedReason``).
    static func desired(for state: PurchaseState, policy: GrantPolicy, suspended: Set<UUID> = []) throws(GrantRejection) -> [EntitlementGrant] {
        guard let owner = state.owner(policy: policy.transferPolicy) else { return [] }
        let customer = CustomerKey(environment: state.key.environment, customerId: owner)
        var (source, active, from, until, reason) = try access(state, policy: policy)
        if active, policy.rescindedConsent == .suspend, suspended.contains(owner) {
            (active, reason) = (false, consentSuspendedReason)
        }
        return policy.catalog.entitlements(for: state.productId).map { key in
            EntitlementGrant(
                id: .init(customer: customer, entitlementKey: key, sourceId: state.key.purchaseId),
                source: source, productId: state.productId, active: active, activeFrom: from, activeUntil: until, reason: reason)
        }
    }

    private static func access(
        _ s: PurchaseState, policy: GrantPolicy
    ) throws(GrantRejection)
        -> (EntitlementSource, Bool, Date?, Date?, String)
    {
        let revokedReason = s.revocationType == RevocationType.familyRevoke.rawValue ? "family_revoked" : "refunded"
        switch ProductType(rawValue: s.productType) {
        case .nonConsumable:
            return (.nonConsumable, s.revokedAt == nil, s.purchaseDate, s.revokedAt, s.revokedAt == nil ? "active" : revokedReason)
        case .nonRenewingSubscription:
            var until = s.expiresAt
            if until == nil, let days = policy.catalog.durationDays(for: s.productId), let start = s.purchaseDate {
                until = start.addingTimeInterval(TimeInterval(days) * 86_400)
            }
            guard let end = until else { throw GrantRejection.unknownDuration(s.productId) }
            if let revoked = s.revokedAt { return (.nonRenewing, false, s.purchaseDate, min(revoked, end), revokedReason) }
            return (.nonRenewing, true, s.purchaseDate, end, "active")
        default:
            let from = s.recentSubscriptionStartDate ?? s.originalPurchaseDate ?? s.purchaseDate
            switch s.lifecycle {
            case .active:
                let renewalExpected = s.autoRenewEnabled == true && !s.isInBillingRetry
                let until = s.expiresAt.map { renewalExpected ? $0.addingTimeInterval(policy.expiryLeeway) : $0 }
                return (.autoRenewable, true, from, until, "active")
            case .gracePeriod:
                let until = [s.gracePeriodExpiresAt, s.expiresAt].compactMap { $0 }.max()
                return (.autoRenewable, true, from, until, "grace_period")
            case .billingRetry:
                return (.autoRenewable, false, from, s.expiresAt, "billing_retry")
            case .expired:
                return (.autoRenewable, false, from, s.expiresAt, s.isUpgraded ? "upgraded" : expiredReason(s.expirationIntent))
            case .revoked:
                return (.autoRenewable, false, from, s.revokedAt ?? s.expiresAt, revokedReason)
            }
        }
    }

    private static func expiredReason(_ intent: Int?) -> String {
        switch intent.map(ExpirationIntent.init(rawValue:)) {
        case .customerCancelled?: "expired_voluntary"
        case .billingError?: "expired_billing"
        case .customerDidNotConsentToPriceIncrease?: "expired_price_increase"
        case .productNotAvailable?: "expired_product_unavailable"
        default: "expired"
        }
    }

    /// The rows to write, the rows to delete and the changes between `existing` and `desired`.
    /// A row no longer desired is deleted (its loss stays in the change history with its cause).
    static func diff(
        existing: [EntitlementGrant], desired: [EntitlementGrant], owner: UUID?, cause: GrantCause
    )
        -> (upserts: [EntitlementGrant], deletions: [EntitlementGrant.ID], changes: [EntitlementChange])
    {
        let before = Dictionary(existing.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let after = Dictionary(desired.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var upserts: [EntitlementGrant] = []
        var deletions: [EntitlementGrant.ID] = []
        var changes: [EntitlementChange] = []
        for id in before.keys.sorted() where after[id] == nil {
            let old = before[id]!
            deletions.append(id)
            if old.active {
                let reason = id.customer.customerId == owner ? "product_changed" : "transferred"
                changes.append(change(.revoked, old, active: false, until: old.activeUntil, reason: reason, cause: cause))
            }
        }
        for id in after.keys.sorted() {
            let new = after[id]!
            let old = before[id]
            guard old != new else { continue }
            upserts.append(new)
            let kind: EntitlementChange.Kind?
            switch (old?.active ?? false, new.active) {
            case (false, true): kind = .granted
            case (true, false): kind = .revoked
            case (true, true): kind = compare(old?.activeUntil, new.activeUntil)
            case (false, false): kind = nil
            }
            if let kind { changes.append(change(kind, new, active: new.active, until: new.activeUntil, reason: new.reason, cause: cause)) }
        }
        return (upserts, deletions, changes)
    }

    private static func compare(_ old: Date?, _ new: Date?) -> EntitlementChange.Kind? {
        switch (old, new) {
        case (nil, nil): nil
        case (.some, nil): .extended
        case (nil, .some): .shortened
        case (let a?, let b?): b > a ? .extended : (b < a ? .shortened : nil)
        }
    }

    private static func change(
        _ kind: EntitlementChange.Kind, _ row: EntitlementGrant, active: Bool, until: Date?, reason: String, cause: GrantCause
    ) -> EntitlementChange {
        EntitlementChange(
            kind: kind, customer: row.id.customer, entitlementKey: row.id.entitlementKey, sourceId: row.id.sourceId,
            productId: row.productId, active: active, activeUntil: until, reason: reason, cause: cause)
    }
}
