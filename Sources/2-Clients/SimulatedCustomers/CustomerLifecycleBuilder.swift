import AppStore
import Foundation

/// Plays one customer's purchases the way Apple records them: each call changes Apple's records
/// (transactions, a subscription's status and renewal info) at a time and appends the step with the
/// notification Apple sends about it. Calls must come in time order.
public struct CustomerLifecycleBuilder: Sendable {
    /// The customer's auto-renewable subscription as Apple tracks it (one group per app here).
    struct Subscription: Sendable {
        var originalTransactionId: String
        var product: SimulatedProduct
        var autoRenewProduct: SimulatedProduct
        var autoRenew = true
        var status: SubscriptionStatus = .active
        var expires: Date
        var graceExpires: Date?
        var inBillingRetry = false
        var expirationIntent: ExpirationIntent?
        var priceIncrease: PriceIncreaseStatus?
        var offer: (type: OfferType, identifier: String)?
        var latestTransactionId: String
        var recentStart: Date
    }

    public let catalog: SimulationCatalog
    public let customerIndex: Int
    /// The token Apple's records carry (`nil`: none). Set by the app at purchase, or by Apple later
    /// (``reassignToken(to:at:)``).
    public private(set) var appAccountToken: UUID?
    public let ownership: InAppOwnershipType
    /// How long one simulated month lasts.
    public let month: TimeInterval

    /// The customer's app transaction (their download of the app), carried by every transaction.
    public var appTransactionId: String { "70" + String(format: "%016d", customerIndex) }

    public private(set) var steps: [LifecycleStep] = []
    /// Every transaction in its latest state.
    public private(set) var transactions: [String: JWSTransactionDecodedPayload] = [:]
    var subscription: Subscription?
    private var sequence = 0

    public init(
        catalog: SimulationCatalog, customerIndex: Int, appAccountToken: UUID?, ownership: InAppOwnershipType = .purchased,
        month: TimeInterval
    ) {
        self.catalog = catalog
        self.customerIndex = customerIndex
        self.appAccountToken = appAccountToken
        self.ownership = ownership
        self.month = month
    }

    // MARK: Auto-renewable subscriptions

    /// `SUBSCRIBED` (`INITIAL_BUY` or, after an expiry in the same group, `RESUBSCRIBE`).
    /// - Parameters:
    ///   - hint: the app uploads the purchase at once for this customer.
    ///   - offerCode: redeemed with an offer code (in the App Store, outside the app: no token).
    ///   - notVisibleLookups: Apple's history does not show the purchase for this many lookups.
    public mutating func subscribe(
        _ product: SimulatedProduct, at time: Date, upload hint: UUID? = nil, offerCode: String? = nil, notVisibleLookups: Int = 0
    ) {
        let resubscribing = subscription != nil
        let id = nextTransactionID()
        let original = subscription?.originalTransactionId ?? id
        let expires = time.addingTimeInterval(Double(product.months ?? 1) * month)
        var tx = transaction(id: id, original: original, product: product, purchase: time, expires: expires, reason: .purchase)
        if let offerCode {
            tx.offerType = .offerCode
            tx.offerIdentifier = offerCode
            transactions[id] = tx
        }
        subscription = Subscription(
            originalTransactionId: original, product: product, autoRenewProduct: product, expires: expires,
            latestTransactionId: id, recentStart: resubscribing ? time : (subscription?.recentStart ?? time))
        let hidden: [AppleMutation] = notVisibleLookups > 0 ? [.historyNotVisible(transactionId: id, lookups: notVisibleLookups)] : []
        record(
            time, hidden + [.transaction(tx), subscriptionMutation(at: time)],
            NotificationSpec(.subscribed, resubscribing ? .resubscribe : .initialBuy, transactionId: id),
            upload: hint.map { UploadSpec(transactionId: id, appAccountToken: $0) })
    }

    /// `DID_RENEW` at the end of the period (or `DID_RENEW`/`BILLING_RECOVERY` when billing recovers
    /// during retry: the new period starts at recovery). A pending plan change takes effect here.
    public mutating func renew(at time: Date? = nil) {
        guard var sub = subscription else { preconditionFailure("renew without a subscription") }
        let recovery = sub.inBillingRetry
        let start = time ?? sub.expires
        let product = sub.autoRenewProduct
        let id = nextTransactionID()
        let expires = start.addingTimeInterval(Double(product.months ?? 1) * month)
        let tx = transaction(
            id: id, original: sub.originalTransactionId, product: product, purchase: start, expires: expires, reason: .renewal)
        sub.product = product
        sub.expires = expires
        sub.status = .active
        sub.inBillingRetry = false
        sub.graceExpires = nil
        sub.expirationIntent = nil
        sub.offer = nil
        if sub.priceIncrease == .customerConsentedOrWasNotifiedWithoutNeedingConsent { sub.priceIncrease = nil }
        sub.latestTransactionId = id
        subscription = sub
        record(
            start, [.transaction(tx), subscriptionMutation(at: start)],
            NotificationSpec(.didRenew, recovery ? .billingRecovery : nil, transactionId: id))
    }

    /// `DID_CHANGE_RENEWAL_STATUS` (`AUTO_RENEW_ENABLED` / `AUTO_RENEW_DISABLED`).
    public mutating func setAutoRenew(_ on: Bool, at time: Date) {
        subscription?.autoRenew = on
        notifyAboutSubscription(at: time, NotificationSpec(.didChangeRenewalStatus, on ? .autoRenewEnabled : .autoRenewDisabled, transactionId: ""))
    }

    /// `DID_CHANGE_RENEWAL_PREF`/`UPGRADE`: a higher level starts at once; the old transaction is
    /// marked upgraded and revoked.
    public mutating func upgrade(to product: SimulatedProduct, at time: Date) {
        guard var sub = subscription, var old = transactions[sub.latestTransactionId] else { preconditionFailure("upgrade without a subscription") }
        old.isUpgraded = true
        old.revocationDate = time
        old.signedDate = time
        transactions[old.transactionId!] = old
        let id = nextTransactionID()
        let expires = time.addingTimeInterval(Double(product.months ?? 1) * month)
        let tx = transaction(id: id, original: sub.originalTransactionId, product: product, purchase: time, expires: expires, reason: .purchase)
        sub.product = product
        sub.autoRenewProduct = product
        sub.expires = expires
        sub.latestTransactionId = id
        subscription = sub
        record(
            time, [.transaction(old), .transaction(tx), subscriptionMutation(at: time)],
            NotificationSpec(.didChangeRenewalPref, .upgrade, transactionId: id))
    }

    /// `DID_CHANGE_RENEWAL_PREF`/`DOWNGRADE`: a lower level, or the same level with another
    /// duration (a crossgrade), takes effect at the next renewal.
    public mutating func changeAtNextRenewal(to product: SimulatedProduct, at time: Date) {
        subscription?.autoRenewProduct = product
        notifyAboutSubscription(at: time, NotificationSpec(.didChangeRenewalPref, .downgrade, transactionId: ""))
    }

    /// `DID_FAIL_TO_RENEW` at the end of the period: billing retry, with a grace period of `grace`
    /// (`/GRACE_PERIOD`, access kept until it ends) or without.
    public mutating func failToRenew(grace: TimeInterval?) {
        guard var sub = subscription else { preconditionFailure("failToRenew without a subscription") }
        let time = sub.expires
        sub.inBillingRetry = true
        sub.expirationIntent = .billingError
        sub.status = grace == nil ? .billingRetry : .billingGracePeriod
        sub.graceExpires = grace.map { sub.expires.addingTimeInterval($0) }
        subscription = sub
        notifyAboutSubscription(at: time, NotificationSpec(.didFailToRenew, grace == nil ? nil : .gracePeriod, transactionId: ""))
    }

    /// `GRACE_PERIOD_EXPIRED`: billing retry goes on without access.
    public mutating func gracePeriodExpired() {
        guard let graceEnd = subscription?.graceExpires else { preconditionFailure("no grace period") }
        subscription?.status = .billingRetry
        notifyAboutSubscription(at: graceEnd, NotificationSpec(.gracePeriodExpired, transactionId: ""))
    }

    /// `EXPIRED` with its subtype (`VOLUNTARY`, `BILLING_RETRY`, `PRICE_INCREASE`, `PRODUCT_NOT_FOR_SALE`).
    public mutating func expire(_ subtype: NotificationSubtype, at time: Date) {
        guard var sub = subscription else { preconditionFailure("expire without a subscription") }
        sub.status = .expired
        sub.autoRenew = false
        sub.inBillingRetry = false
        sub.graceExpires = nil
        sub.expirationIntent =
            switch subtype {
            case .voluntary: .customerCancelled
            case .billingRetry: .billingError
            case .priceIncrease: .customerDidNotConsentToPriceIncrease
            case .productNotForSale: .productNotAvailable
            default: .other
            }
        subscription = sub
        notifyAboutSubscription(at: time, NotificationSpec(.expired, subtype, transactionId: ""))
    }

    /// `PRICE_INCREASE` (`PENDING` or `ACCEPTED`).
    public mutating func priceIncrease(accepted: Bool, at time: Date) {
        subscription?.priceIncrease = accepted ? .customerConsentedOrWasNotifiedWithoutNeedingConsent : .customerHasNotResponded
        notifyAboutSubscription(at: time, NotificationSpec(.priceIncrease, accepted ? .accepted : .pending, transactionId: ""))
    }

    /// `OFFER_REDEEMED` on an active subscription: a promotional offer for the next period.
    public mutating func redeemOffer(at time: Date) {
        subscription?.offer = (.promotionalOffer, "loyalty-discount")
        notifyAboutSubscription(at: time, NotificationSpec(.offerRedeemed, transactionId: ""))
    }

    /// `RENEWAL_EXTENDED`: Apple moves the current period's end (a service-issue extension).
    public mutating func extendRenewal(by extra: TimeInterval, at time: Date) {
        guard var sub = subscription, var tx = transactions[sub.latestTransactionId] else { preconditionFailure("no subscription") }
        sub.expires = sub.expires.addingTimeInterval(extra)
        tx.expiresDate = sub.expires
        tx.signedDate = time
        transactions[tx.transactionId!] = tx
        subscription = sub
        record(time, [.transaction(tx), subscriptionMutation(at: time)], NotificationSpec(.renewalExtended, transactionId: tx.transactionId!))
    }

    // MARK: Who the purchase belongs to

    /// The app tells the backend about a purchase later (e.g. on its next launch after a purchase
    /// made outside it): the transaction as StoreKit signs it, or a StoreKit 1 app receipt.
    public mutating func upload(_ kind: UploadSpec.Kind, of transactionId: String, for customer: UUID, at time: Date) {
        record(time, [], nil, upload: UploadSpec(transactionId: transactionId, appAccountToken: customer, kind: kind))
    }

    /// Apple re-assigns the subscription's token (Set App Account Token, or a crossgrade made while
    /// signed in as another account): its transactions and renewal info carry `token` from now on.
    /// Apple sends no notification for it; the next one carries the new token.
    public mutating func reassignToken(to token: UUID, at time: Date) {
        guard let sub = subscription else { preconditionFailure("reassignToken without a subscription") }
        appAccountToken = token
        var mutations: [AppleMutation] = []
        for (id, var tx) in transactions.sorted(by: { $0.key < $1.key }) where tx.originalTransactionId == sub.originalTransactionId {
            tx.appAccountToken = token
            tx.signedDate = time
            transactions[id] = tx
            mutations.append(.transaction(tx))
        }
        record(time, mutations + [subscriptionMutation(at: time)], nil)
    }

    // MARK: Refunds and revocation

    /// `REFUND` (or `REVOKE` for a family-shared purchase) of a transaction: its access ends. A
    /// prorated refund names the refunded share in milliunits (`REFUND_PRORATED`, 30000 is 30 %).
    /// `delivered: false`: Apple's notification never reaches the webhook.
    public mutating func revoke(
        _ transactionId: String, at time: Date, familySharing: Bool = false, proratedShare: Int32? = nil, delivered: Bool = true
    ) {
        guard var tx = transactions[transactionId] else { preconditionFailure("no transaction \(transactionId)") }
        tx.revocationDate = time
        tx.revocationReason = familySharing ? .refundedForOtherReason : .refundedDueToIssue
        tx.revocationType = familySharing ? .familyRevoke : proratedShare == nil ? .refundFull : .refundProrated
        tx.revocationPercentage = familySharing ? nil : proratedShare
        tx.signedDate = time
        transactions[transactionId] = tx
        var mutations: [AppleMutation] = [.transaction(tx)]
        if let sub = subscription, tx.originalTransactionId == sub.originalTransactionId, transactionId == sub.latestTransactionId {
            subscription?.status = .revoked
            mutations.append(subscriptionMutation(at: time))
        }
        record(time, mutations, NotificationSpec(familySharing ? .revoke : .refund, transactionId: transactionId, neverDelivered: !delivered))
    }

    /// `REFUND_REVERSED`: a refund was undone after a dispute; access returns.
    public mutating func reverseRefund(_ transactionId: String, at time: Date) {
        guard var tx = transactions[transactionId] else { preconditionFailure("no transaction \(transactionId)") }
        tx.revocationDate = nil
        tx.revocationReason = nil
        tx.revocationType = nil
        tx.revocationPercentage = nil
        tx.signedDate = time
        transactions[transactionId] = tx
        var mutations: [AppleMutation] = [.transaction(tx)]
        if let sub = subscription, transactionId == sub.latestTransactionId {
            subscription?.status = sub.expires > time ? .active : .expired
            mutations.append(subscriptionMutation(at: time))
        }
        record(time, mutations, NotificationSpec(.refundReversed, transactionId: transactionId))
    }

    /// `CONSUMPTION_REQUEST` then, later, `REFUND_DECLINED`: nothing changes for the customer.
    public mutating func refundRequested(_ transactionId: String, at time: Date, declinedAt: Date) {
        record(time, [], NotificationSpec(.consumptionRequest, transactionId: transactionId, consumptionRequestReason: .unsatisfiedWithPurchase))
        record(declinedAt, [], NotificationSpec(.refundDeclined, transactionId: transactionId))
    }

    // MARK: Consent

    /// `RESCIND_CONSENT`: a parent withdrew consent for the child's use of the app. Apple's records do
    /// not change; the notification names the customer's app transaction (`appData`), found by the
    /// simulated Apple from one of the customer's purchases, and no purchase.
    public mutating func rescindConsent(at time: Date) {
        guard let purchase = transactions.keys.min() else { preconditionFailure("rescindConsent before any purchase") }
        record(time, [], NotificationSpec(.rescindConsent, transactionId: purchase))
    }

    // MARK: One-time purchases

    /// `ONE_TIME_CHARGE` for a consumable, non-consumable or non-renewing subscription.
    @discardableResult
    public mutating func buyOnce(_ product: SimulatedProduct, quantity: Int32 = 1, at time: Date, upload hint: UUID? = nil) -> String {
        let id = nextTransactionID()
        var tx = transaction(id: id, original: id, product: product, purchase: time, expires: nil, reason: .purchase)
        tx.quantity = quantity
        transactions[id] = tx
        record(
            time, [.transaction(tx)], NotificationSpec(.oneTimeCharge, transactionId: id),
            upload: hint.map { UploadSpec(transactionId: id, appAccountToken: $0) })
        return id
    }

    /// The latest transaction of the subscription.
    public var latestSubscriptionTransactionId: String? { subscription?.latestTransactionId }
    /// When the subscription's current period ends.
    public var subscriptionExpires: Date? { subscription?.expires }

    // MARK: Building blocks

    private mutating func nextTransactionID() -> String {
        sequence += 1
        return String(7_000_000_000_000_000 + customerIndex * 1_000 + sequence)
    }

    private mutating func transaction(
        id: String, original: String, product: SimulatedProduct, purchase: Date, expires: Date?, reason: TransactionReason
    ) -> JWSTransactionDecodedPayload {
        let originalPurchase = transactions[original]?.purchaseDate ?? purchase
        let tx = JWSTransactionDecodedPayload(
            originalTransactionId: original, transactionId: id,
            webOrderLineItemId: product.type == .autoRenewableSubscription ? String(8_000_000_000_000_000 + customerIndex * 1_000 + sequence) : nil,
            bundleId: catalog.bundleId, productId: product.productId, subscriptionGroupIdentifier: product.subscriptionGroup,
            purchaseDate: purchase, originalPurchaseDate: originalPurchase,
            expiresDate: product.type == .autoRenewableSubscription ? expires : nil, quantity: 1, type: product.type,
            appAccountToken: appAccountToken, inAppOwnershipType: ownership, signedDate: purchase, environment: .sandbox,
            storefront: "USA", storefrontId: "143441", transactionReason: reason, currency: "USD", price: product.price,
            appTransactionId: appTransactionId)
        transactions[id] = tx
        return tx
    }

    private func subscriptionMutation(at time: Date) -> AppleMutation {
        guard let sub = subscription else { preconditionFailure("no subscription") }
        let renewal = JWSRenewalInfoDecodedPayload(
            expirationIntent: sub.status == .expired || sub.inBillingRetry ? sub.expirationIntent : nil,
            originalTransactionId: sub.originalTransactionId, autoRenewProductId: sub.autoRenewProduct.productId,
            productId: sub.product.productId, autoRenewStatus: sub.autoRenew ? .on : .off,
            isInBillingRetryPeriod: sub.inBillingRetry, priceIncreaseStatus: sub.priceIncrease,
            gracePeriodExpiresDate: sub.graceExpires, offerType: sub.offer?.type, offerIdentifier: sub.offer?.identifier,
            signedDate: time, environment: .sandbox, recentSubscriptionStartDate: sub.recentStart,
            renewalDate: sub.status == .expired ? nil : sub.expires, currency: "USD", renewalPrice: sub.autoRenewProduct.price,
            appAccountToken: appAccountToken)
        return .subscription(originalTransactionId: sub.originalTransactionId, status: sub.status, renewalInfo: renewal)
    }

    /// A subscription change without a new transaction: the notification is about the latest one.
    private mutating func notifyAboutSubscription(at time: Date, _ spec: NotificationSpec) {
        guard let sub = subscription else { preconditionFailure("no subscription") }
        var spec = spec
        spec.transactionId = sub.latestTransactionId
        record(time, [subscriptionMutation(at: time)], spec)
    }

    private mutating func record(_ time: Date, _ mutations: [AppleMutation], _ notification: NotificationSpec?, upload: UploadSpec? = nil) {
        precondition(steps.last.map { $0.time <= time } ?? true, "lifecycle steps must come in time order")
        steps.append(LifecycleStep(time: time, mutations: mutations, notification: notification, upload: upload))
    }
}
