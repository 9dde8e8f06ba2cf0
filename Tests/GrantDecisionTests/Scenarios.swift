import AppStore
import Foundation
import GrantDecision
import GrantWorkload
import PipelineRecords

let alice = UUID(uuidString: "A11CE000-0000-4000-8000-000000000001")!
let bob = UUID(uuidString: "B0B00000-0000-4000-8000-000000000002")!
let t0 = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

let testCatalog: ProductCatalog = {
    var c = LifecycleGenerator.catalog
    c.products["season.pass"] = .init(entitlements: ["season"], durationDays: 90)
    return c
}()

let testPolicy = GrantPolicy(catalog: testCatalog, expiryLeeway: 3600, transferPolicy: .refuse)

/// The entitlement each test product grants first.
func primaryEntitlement(_ product: ProductType) -> String {
    switch product {
    case .autoRenewableSubscription: "premium"
    case .nonConsumable: "lifetime"
    case .nonRenewingSubscription: "season"
    default: "coins"
    }
}

/// Types that carry no purchase (enrich does no lookup for them).
func carriesNoPurchase(_ type: NotificationType, _ subtype: NotificationSubtype?) -> Bool {
    [.test, .externalPurchaseToken, .rescindConsent].contains(type) || (type == .renewalExtension && subtype == .summary)
}

/// The events before, and the event under test, for one (type, subtype, product type): Apple's data
/// as Apple would send it for that transition.
func scenario(_ type: NotificationType, _ subtype: NotificationSubtype?, _ product: ProductType) -> (prior: [EnrichedRecord], event: EnrichedRecord) {
    if product != .autoRenewableSubscription { return oneTimeScenario(type, subtype, product) }
    var sub = SimulatedPurchase(
        customer: alice, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
        originalTransactionId: "sub-1", start: t0, uuidSeed: 7)
    sub.addTransaction(reason: .purchase)
    let first = sub.notify(.subscribed, .initialBuy)
    var prior = [first]
    sub.advance(3600)
    let expiry = { sub.latest!.expiresDate! }
    switch (type, subtype) {
    case (.subscribed, .initialBuy?):
        return ([], first)
    case (.subscribed, .resubscribe?):
        sub.now = expiry().addingTimeInterval(600)
        sub.autoRenew = false
        sub.status = .expired
        sub.expirationIntent = .customerCancelled
        prior.append(sub.notify(.expired, .voluntary))
        sub.advance(86_400)
        sub.addTransaction(reason: .purchase)
        sub.status = .active
        sub.autoRenew = true
        sub.expirationIntent = nil
    case (.didChangeRenewalPref, .upgrade?), (.offerRedeemed, .upgrade?):
        sub.markLatestUpgraded()
        sub.addTransaction(product: LifecycleGenerator.plus, reason: .purchase)
        sub.autoRenewProductId = LifecycleGenerator.plus
    case (.didChangeRenewalPref, .downgrade?), (.offerRedeemed, .downgrade?):
        sub.autoRenewProductId = LifecycleGenerator.basic
    case (.didChangeRenewalPref, nil):
        sub.autoRenewProductId = LifecycleGenerator.basic
        prior.append(sub.notify(.didChangeRenewalPref, .downgrade))
        sub.advance(60)
        sub.autoRenewProductId = sub.productId
    case (.didChangeRenewalStatus, .autoRenewDisabled?):
        sub.autoRenew = false
    case (.didChangeRenewalStatus, .autoRenewEnabled?):
        sub.autoRenew = false
        prior.append(sub.notify(.didChangeRenewalStatus, .autoRenewDisabled))
        sub.advance(60)
        sub.autoRenew = true
    case (.didRenew, nil):
        let end = expiry()
        sub.now = end.addingTimeInterval(-60)
        sub.addTransaction(reason: .renewal, start: end)
    case (.didRenew, .billingRecovery?):
        sub.now = expiry().addingTimeInterval(60)
        sub.billingRetry = true
        sub.status = .billingRetry
        sub.expirationIntent = .billingError
        prior.append(sub.notify(.didFailToRenew))
        sub.advance(2 * 86_400)
        sub.billingRetry = false
        sub.status = .active
        sub.expirationIntent = nil
        sub.addTransaction(reason: .renewal)
    case (.expired, let reason):
        sub.now = expiry().addingTimeInterval(60)
        sub.autoRenew = false
        sub.status = .expired
        sub.expirationIntent =
            switch reason {
            case .voluntary?: .customerCancelled
            case .billingRetry?: .billingError
            case .priceIncrease?: .customerDidNotConsentToPriceIncrease
            case .productNotForSale?: .productNotAvailable
            default: nil
            }
    case (.didFailToRenew, .gracePeriod?), (.gracePeriodExpired, _):
        sub.now = expiry().addingTimeInterval(60)
        sub.billingRetry = true
        sub.graceUntil = expiry().addingTimeInterval(16 * 86_400)
        sub.status = .billingGracePeriod
        if type == .gracePeriodExpired {
            prior.append(sub.notify(.didFailToRenew, .gracePeriod))
            sub.now = sub.graceUntil!.addingTimeInterval(60)
            sub.status = .billingRetry
        }
    case (.didFailToRenew, nil):
        sub.now = expiry().addingTimeInterval(60)
        sub.billingRetry = true
        sub.status = .billingRetry
    case (.priceIncrease, .pending?):
        sub.priceIncrease = .customerHasNotResponded
    case (.priceIncrease, .accepted?):
        sub.priceIncrease = .customerConsentedOrWasNotifiedWithoutNeedingConsent
    case (.refund, _):
        sub.revokeLatest(.refundFull)
        sub.status = .revoked
    case (.refundReversed, _):
        sub.revokeLatest(.refundFull)
        sub.status = .revoked
        prior.append(sub.notify(.refund))
        sub.advance(86_400)
        sub.revokeLatest(nil)
        sub.status = .active
    case (.revoke, _):
        sub.revokeLatest(.familyRevoke)
        sub.status = .revoked
    case (.renewalExtended, _):
        var last = sub.transactions.removeLast()
        last.expiresDate = last.expiresDate?.addingTimeInterval(7 * 86_400)
        sub.transactions.append(last)
    default:
        break
    }
    let event = sub.notify(type, subtype, lookup: carriesNoPurchase(type, subtype) ? Enrichment.Lookup.none : .history)
    return (prior, event)
}

private func oneTimeScenario(
    _ type: NotificationType, _ subtype: NotificationSubtype?, _ product: ProductType
) -> (prior: [EnrichedRecord], event: EnrichedRecord) {
    let productId =
        switch product {
        case .nonConsumable: LifecycleGenerator.lifetime
        case .consumable: LifecycleGenerator.coins
        default: "season.pass"
        }
    var p = SimulatedPurchase(customer: alice, productType: product, productId: productId, originalTransactionId: "one-1", start: t0, uuidSeed: 11)
    p.addTransaction(reason: .purchase)
    let first = p.notify(.oneTimeCharge)
    var prior = [first]
    p.advance(3600)
    switch type {
    case .oneTimeCharge: return ([], first)
    case .refund: p.revokeLatest(.refundFull)
    case .revoke: p.revokeLatest(.familyRevoke)
    case .refundReversed:
        p.revokeLatest(.refundFull)
        prior.append(p.notify(.refund))
        p.advance(86_400)
        p.revokeLatest(nil)
    default: break
    }
    return (prior, p.notify(type, subtype, lookup: carriesNoPurchase(type, subtype) ? Enrichment.Lookup.none : nil))
}
