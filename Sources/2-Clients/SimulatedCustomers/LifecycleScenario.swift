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
    /// An old app version (StoreKit 1, no token) sends its app receipt after the purchase.
    case storeKit1Receipt = "storekit1-receipt"
    /// An offer code redeemed in the App Store (no token); the app uploads the purchase on its next launch.
    case offerCodeUploaded = "offer-code-uploaded"
    /// Apple re-assigns the purchase's token to another customer (Set App Account Token).
    case tokenReassigned = "token-reassigned"
    /// A family member's own `FAMILY_SHARED` transaction (no token), uploaded by the member's app.
    case familyShared = "family-shared"
    /// Apple's history does not show the purchase yet when the pipeline first asks.
    case notYetInHistory = "not-yet-in-history"
    /// Consumable packs partly refunded (`REFUND_PRORATED`): one keeps the unrefunded share, the
    /// other's refund is reversed (`REFUND_REVERSED`) and the whole pack comes back.
    case proratedConsumableRefund = "prorated-consumable-refund"
    /// A consumable pack refunded whose `REFUND` never reaches the webhook. Nothing else about it
    /// reaches the pipeline (a consumable is enriched from its own transaction, never from history),
    /// so only the refund sweep (`appstorectl refunds`) brings the refund.
    case refundNeverDelivered = "refund-never-delivered"
    /// An active yearly streaming subscriber: a lifecycle run's mass renewal extension (`appstorectl
    /// extend-all` after the pipeline drained) moves their end, and the ground truth with it.
    case massExtended = "mass-extended"
    /// A streaming subscriber in billing retry: the mass extension cannot extend them (Apple sends
    /// `RENEWAL_EXTENSION/FAILURE`); they stay without access.
    case massExtensionIneligible = "mass-extension-ineligible"
    /// A subscriber whose parent withdraws consent for the app (`RESCIND_CONSENT`): grant tells the
    /// services downstream (`consent_rescinded` on the change stream); access is unchanged.
    case consentRescinded = "consent-rescinded"

    /// The order customers take scenarios in: every scenario once, and a second family member, so
    /// each family in a run has members who keep access beside the one whose access is revoked.
    public static let rotation: [LifecycleScenario] = allCases + [.familyShared]

    /// The token Apple's records carry at purchase: the customer's, none (the app or the App Store
    /// set none: the customer is known only from an upload), or another customer's that Apple later
    /// replaces.
    func initialToken(customer: UUID, former: UUID?) -> UUID? {
        switch self {
        case .withoutTokenUploaded, .storeKit1Receipt, .offerCodeUploaded, .familyShared, .familySharingRevoked: nil
        case .tokenReassigned: former
        default: customer
        }
    }

    /// Family members' purchases are `FAMILY_SHARED`; everyone else bought their own.
    var ownership: InAppOwnershipType {
        self == .familyShared || self == .familySharingRevoked ? .familyShared : .purchased
    }

    /// Plays the scenario into `builder`, ending before `horizon`, for `customer` (who uploads what
    /// Apple does not name). `jitter` (0…1) shifts times by up to 0.05 months so customers do not
    /// all act at the same instant.
    func play(into builder: inout CustomerLifecycleBuilder, horizon: Date, customer: UUID, jitter: Double) {
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
            builder.subscribe(c.premiumMonthly, at: at(1.5), upload: customer)
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
            builder.subscribe(c.premiumMonthly, at: at(0.8), upload: customer)
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
        case .storeKit1Receipt:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.upload(.appReceipt, of: builder.latestSubscriptionTransactionId!, for: customer, at: at(1.4))
            builder.renew()
        case .offerCodeUploaded:
            builder.subscribe(c.premiumMonthly, at: at(1.5), offerCode: "WELCOME-BACK")
            builder.upload(.signedTransaction, of: builder.latestSubscriptionTransactionId!, for: customer, at: at(1.3))
            builder.renew()
        case .tokenReassigned:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.reassignToken(to: customer, at: at(1.2))
            builder.renew()
        case .familyShared:
            builder.subscribe(c.premiumMonthly, at: at(1.5), upload: customer)
            builder.renew()
        case .notYetInHistory:
            builder.subscribe(c.premiumMonthly, at: at(0.6), notVisibleLookups: 2)
        case .proratedConsumableRefund:
            let kept = builder.buyOnce(c.coins, quantity: 10, at: at(1.0))
            let reversed = builder.buyOnce(c.coins, quantity: 4, at: at(0.9))
            builder.revoke(kept, at: at(0.7), proratedShare: 30_000)
            builder.revoke(reversed, at: at(0.6), proratedShare: 50_000)
            builder.reverseRefund(reversed, at: at(0.4))
        case .refundNeverDelivered:
            let pack = builder.buyOnce(c.coins, quantity: 3, at: at(1.0))
            builder.revoke(pack, at: at(0.5), delivered: false)
        case .massExtended:
            builder.subscribe(c.streamingYearly, at: at(1.5))
        case .massExtensionIneligible:
            builder.subscribe(c.streamingYearly, at: at(12.5))
            builder.failToRenew(grace: nil)
        case .consentRescinded:
            builder.subscribe(c.premiumMonthly, at: at(1.5))
            builder.renew()
            builder.rescindConsent(at: at(0.35))
        }
    }
}
