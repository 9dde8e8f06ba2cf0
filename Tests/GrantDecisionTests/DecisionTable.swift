import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import PipelineRecords

/// Every (notificationType, subtype) pair of Apple's reference (section b.1/b.2), plus an unknown
/// type and an unknown subtype.
let referencePairs: [(NotificationType, NotificationSubtype?)] = [
    (.subscribed, .initialBuy), (.subscribed, .resubscribe),
    (.didChangeRenewalPref, .upgrade), (.didChangeRenewalPref, .downgrade), (.didChangeRenewalPref, nil),
    (.didChangeRenewalStatus, .autoRenewEnabled), (.didChangeRenewalStatus, .autoRenewDisabled),
    (.offerRedeemed, .upgrade), (.offerRedeemed, .downgrade), (.offerRedeemed, nil),
    (.didRenew, .billingRecovery), (.didRenew, nil),
    (.expired, .voluntary), (.expired, .billingRetry), (.expired, .priceIncrease), (.expired, .productNotForSale), (.expired, nil),
    (.didFailToRenew, .gracePeriod), (.didFailToRenew, nil),
    (.gracePeriodExpired, nil),
    (.priceIncrease, .pending), (.priceIncrease, .accepted),
    (.refund, nil), (.refundDeclined, nil), (.refundReversed, nil), (.consumptionRequest, nil),
    (.renewalExtended, nil), (.renewalExtension, .summary), (.renewalExtension, .failure),
    (.revoke, nil), (.test, nil),
    (.externalPurchaseToken, .unreported), (.externalPurchaseToken, .created), (.externalPurchaseToken, .activeTokenReminder),
    (.oneTimeCharge, nil), (.rescindConsent, nil), (.metadataUpdate, nil), (.migration, nil), (.priceChange, nil),
    (.unknown("SUBSCRIPTION_PAUSED"), nil), (.didRenew, .unknown("LOYALTY_BONUS")),
]

let productTypes: [ProductType] = [.autoRenewableSubscription, .nonConsumable, .consumable, .nonRenewingSubscription]

/// What the decision must produce for one case.
struct Expectation: CustomStringConvertible {
    var outcome: GrantDecision.Outcome
    /// The purchase's lifecycle afterwards (nil: not checked, e.g. consumables).
    var lifecycle: Lifecycle?
    /// Whether the customer's entitlement (or consumable) is active afterwards.
    var active: Bool
    /// The entitlement row's reason afterwards, when checked.
    var reason: String?
    /// The kinds of the changes, sorted.
    var changes: [EntitlementChange.Kind]

    var description: String { "\(outcome) \(lifecycle.map(\.rawValue) ?? "-") active=\(active) \(reason ?? "") \(changes.map(\.rawValue))" }
}

let recordedOnly: Set<String> = [
    "TEST", "REFUND_DECLINED", "CONSUMPTION_REQUEST", "EXTERNAL_PURCHASE_TOKEN", "RESCIND_CONSENT", "SUBSCRIPTION_PAUSED",
]

func isRecordedOnly(_ type: NotificationType, _ subtype: NotificationSubtype?) -> Bool {
    recordedOnly.contains(type.rawValue) || (type == .renewalExtension && subtype == .summary) || (subtype.map { !$0.isKnown } ?? false)
}

/// The expected result for an auto-renewable subscription, written out case by case from
/// design.md's "Entitlement semantics" and Apple's lifecycle table.
func subscriptionExpectation(_ type: NotificationType, _ subtype: NotificationSubtype?) -> Expectation {
    if isRecordedOnly(type, subtype) { return Expectation(outcome: .recorded, lifecycle: .active, active: true, reason: "active", changes: []) }
    switch (type, subtype) {
    case (.subscribed, .initialBuy?): return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.granted])
    case (.subscribed, .resubscribe?): return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.granted])
    case (.didChangeRenewalPref, .upgrade?), (.offerRedeemed, .upgrade?):
        // Immediate: the new product's transaction is in force; premium runs on to its new expiry, premium_plus starts.
        return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.extended, .granted])
    case (.didChangeRenewalPref, .downgrade?), (.offerRedeemed, .downgrade?):
        // At the next renewal: nothing changes now.
        return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [])
    case (.didChangeRenewalPref, nil), (.offerRedeemed, nil):
        return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [])
    case (.didChangeRenewalStatus, .autoRenewDisabled?):
        // No renewal expected any more: the leeway past expiresDate goes.
        return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.shortened])
    case (.didChangeRenewalStatus, .autoRenewEnabled?):
        return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.extended])
    case (.didRenew, nil): return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.extended])
    case (.didRenew, .billingRecovery?): return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.granted])
    case (.expired, .voluntary?):
        return .init(outcome: .applied, lifecycle: .expired, active: false, reason: "expired_voluntary", changes: [.revoked])
    case (.expired, .billingRetry?):
        return .init(outcome: .applied, lifecycle: .expired, active: false, reason: "expired_billing", changes: [.revoked])
    case (.expired, .priceIncrease?):
        return .init(outcome: .applied, lifecycle: .expired, active: false, reason: "expired_price_increase", changes: [.revoked])
    case (.expired, .productNotForSale?):
        return .init(outcome: .applied, lifecycle: .expired, active: false, reason: "expired_product_unavailable", changes: [.revoked])
    case (.expired, nil): return .init(outcome: .applied, lifecycle: .expired, active: false, reason: "expired", changes: [.revoked])
    case (.didFailToRenew, .gracePeriod?):
        return .init(outcome: .applied, lifecycle: .gracePeriod, active: true, reason: "grace_period", changes: [.extended])
    case (.didFailToRenew, nil):
        return .init(outcome: .applied, lifecycle: .billingRetry, active: false, reason: "billing_retry", changes: [.revoked])
    case (.gracePeriodExpired, nil):
        return .init(outcome: .applied, lifecycle: .billingRetry, active: false, reason: "billing_retry", changes: [.revoked])
    case (.priceIncrease, _): return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [])
    case (.refund, nil): return .init(outcome: .applied, lifecycle: .revoked, active: false, reason: "refunded", changes: [.revoked])
    case (.refundReversed, nil): return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.granted])
    case (.renewalExtended, nil): return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [.extended])
    case (.revoke, nil): return .init(outcome: .applied, lifecycle: .revoked, active: false, reason: "family_revoked", changes: [.revoked])
    default:
        // RENEWAL_EXTENSION/FAILURE, ONE_TIME_CHARGE, METADATA_UPDATE, MIGRATION, PRICE_CHANGE: the
        // truth is unchanged, so is access.
        return .init(outcome: .applied, lifecycle: .active, active: true, reason: "active", changes: [])
    }
}

/// The expected result for a one-time purchase (non-consumable, non-renewing, consumable): only
/// purchase, refund, revocation and reversal move it.
func oneTimeExpectation(_ type: NotificationType, _ subtype: NotificationSubtype?, _ product: ProductType) -> Expectation {
    let consumable = product == .consumable
    let lifecycle: (Lifecycle) -> Lifecycle? = { consumable ? nil : $0 }
    if isRecordedOnly(type, subtype) { return .init(outcome: .recorded, lifecycle: lifecycle(.active), active: true, reason: nil, changes: []) }
    switch type {
    case .oneTimeCharge:
        return .init(
            outcome: .applied, lifecycle: lifecycle(.active), active: true, reason: nil, changes: [consumable ? .consumableGranted : .granted])
    case .refund:
        return .init(
            outcome: .applied, lifecycle: lifecycle(.revoked), active: false, reason: consumable ? nil : "refunded",
            changes: [consumable ? .consumableRevoked : .revoked])
    case .revoke:
        return .init(
            outcome: .applied, lifecycle: lifecycle(.revoked), active: false, reason: consumable ? nil : "family_revoked",
            changes: [consumable ? .consumableRevoked : .revoked])
    case .refundReversed:
        return .init(
            outcome: .applied, lifecycle: lifecycle(.active), active: true, reason: nil, changes: [consumable ? .consumableGranted : .granted])
    default:
        return .init(outcome: .applied, lifecycle: lifecycle(.active), active: true, reason: nil, changes: [])
    }
}
