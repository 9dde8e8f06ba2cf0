import AppStore
import Foundation

/// The lifecycles the simulation plays, each ending at least 0.3 simulated months away from any
/// boundary (an expiry, a grace period's end) so the expected state is stable when it is checked.
public enum LifecycleScenario: String, CaseIterable, Codable, Sendable {
    case renewing = "renewing"
    case withoutTokenUploaded = "without-token-uploaded"
    case upgrade
    case downgrade
    case crossgrade
    case autoRenewOffAndOn = "auto-renew-off-and-on"
    case gracePeriodRecovered = "grace-period-recovered"
    case billingRetryExpired = "billing-retry-expired"
    case inBillingRetry = "in-billing-retry"
    case inGracePeriod = "in-grace-period"
    case voluntaryExpiry = "voluntary-expiry"
    case resubscribed
    case priceIncreaseAccepted = "price-increase-accepted"
    case priceIncreaseDeclined = "price-increase-declined"
    case offerRedeemed = "offer-redeemed"
    case refunded
    case refundReversed = "refund-reversed"
    case refundDeclined = "refund-declined"
    case familySharingRevoked = "family-sharing-revoked"
    case renewalExtended = "renewal-extended"
    case consumables
    case nonConsumable = "non-consumable"
    case nonRenewing = "non-renewing"

    /// Plays the scenario into `builder`, ending before `horizon`. `jitter` (0…1) shifts times by up
    /// to 0.05 months so customers do not all act at the same instant.
    func play(into builder: inout CustomerLifecycleBuilder, horizon: Date, hint: UUID?, jitter: Double) {
        let m = builder.month
        func at(_ monthsBeforeHorizon: Double) -> Date {
            horizon.addingTimeInterval(-(monthsBeforeHorizon - 0.05 * jitter) * m)
        }
        let c = builder.catalog
        switch self {
        case .renewing:
            builder.subscribe(c.premiumMonthly, at: at(2.5))
            builder.renew()
            builder.renew()
        case .withoutTokenUploaded:
            builder.subscribe(c.premiumMonthly, at: at(1.5), upload: hint)
            builder.renew()
        case .upgrade:
            builder.subscribe(c.basicMonthly, at: at(1.5))
            builder.renew()
            builder.upgrade(to: c.premiumMonthly, at: at(0.3))
        case .downgrade:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.changeAtNextRenewal(to: c.basicMonthly, at: at(1.2))
            builder.renew()
        case .crossgrade:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.changeAtNextRenewal(to: c.premiumYearly, at: at(1.2))
            builder.renew()
        case .autoRenewOffAndOn:
            builder.subscribe(c.premiumMonthly, at: at(2.5))
            builder.renew()
            builder.setAutoRenew(false, at: at(1.2))
            builder.setAutoRenew(true, at: at(0.8))
            builder.renew()
        case .gracePeriodRecovered:
            builder.subscribe(c.premiumMonthly, at: at(2.5))
            builder.renew()
            builder.failToRenew(grace: 0.3 * m)
            builder.renew(at: at(0.3))
        case .billingRetryExpired:
            builder.subscribe(c.premiumMonthly, at: at(3.5))
            builder.renew()
            builder.failToRenew(grace: 0.3 * m)
            builder.gracePeriodExpired()
            builder.expire(.billingRetry, at: at(0.6))
        case .inBillingRetry:
            builder.subscribe(c.premiumMonthly, at: at(1.6))
            builder.failToRenew(grace: nil)
        case .inGracePeriod:
            builder.subscribe(c.premiumMonthly, at: at(1.1))
            builder.failToRenew(grace: 0.7 * m)
        case .voluntaryExpiry:
            builder.subscribe(c.premiumMonthly, at: at(2.5))
            builder.setAutoRenew(false, at: at(2.0))
            builder.expire(.voluntary, at: at(1.5))
        case .resubscribed:
            builder.subscribe(c.basicMonthly, at: at(3.5))
            builder.setAutoRenew(false, at: at(3.0))
            builder.expire(.voluntary, at: at(2.5))
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.renew()
        case .priceIncreaseAccepted:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.priceIncrease(accepted: false, at: at(1.0))
            builder.priceIncrease(accepted: true, at: at(0.8))
            builder.renew()
        case .priceIncreaseDeclined:
            builder.subscribe(c.premiumMonthly, at: at(2.5))
            builder.priceIncrease(accepted: false, at: at(2.0))
            builder.expire(.priceIncrease, at: at(1.5))
        case .offerRedeemed:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.redeemOffer(at: at(1.0))
            builder.renew()
        case .refunded:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.renew()
            builder.revoke(builder.latestSubscriptionTransactionId!, at: at(0.3))
        case .refundReversed:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.renew()
            builder.revoke(builder.latestSubscriptionTransactionId!, at: at(0.4))
            builder.reverseRefund(builder.latestSubscriptionTransactionId!, at: at(0.2))
        case .refundDeclined:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.renew()
            builder.refundRequested(builder.latestSubscriptionTransactionId!, at: at(0.4), declinedAt: at(0.3))
        case .familySharingRevoked:
            builder.subscribe(c.premiumMonthly, at: at(0.8))
            builder.revoke(builder.latestSubscriptionTransactionId!, at: at(0.4), familySharing: true)
        case .renewalExtended:
            builder.subscribe(c.premiumMonthly, at: at(0.8))
            builder.extendRenewal(by: 0.5 * m, at: at(0.5))
        case .consumables:
            builder.buyOnce(c.coins, quantity: 2, at: at(1.0))
            let refunded = builder.buyOnce(c.coins, at: at(0.8))
            builder.buyOnce(c.coins, quantity: 3, at: at(0.6))
            builder.revoke(refunded, at: at(0.4))
        case .nonConsumable:
            builder.buyOnce(c.lifetime, at: at(2.0))
        case .nonRenewing:
            builder.buyOnce(c.seasonPass, at: at(1.0))
        }
    }
}
