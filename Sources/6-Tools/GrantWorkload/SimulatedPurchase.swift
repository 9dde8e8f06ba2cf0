import AppStore
import Foundation
import PipelineRecords

/// Apple's side of one purchase, simulated: its transactions, renewal info and status, moved by
/// the operations Apple performs (renew, fail, recover, refund, upgrade…). Each operation returns
/// the enriched record grant would receive for the notification Apple sends — with the enrichment
/// enrich would add (history and status fetched a moment after the notification was signed).
public struct SimulatedPurchase: Sendable {
    public var environment: AppStoreEnvironment
    public var bundleId = "com.example.app"
    public var customer: UUID?
    public var productType: ProductType
    public var originalTransactionId: String
    public var groupId = "group.premium"
    public var transactions: [JWSTransactionDecodedPayload] = []
    public var productId: String
    public var autoRenewProductId: String
    public var autoRenew = true
    public var billingRetry = false
    public var graceUntil: Date?
    public var expirationIntent: ExpirationIntent?
    public var priceIncrease: PriceIncreaseStatus?
    public var status: SubscriptionStatus = .active
    /// The quantity of the transactions added from now on (a consumable pack of several).
    public var quantity: Int32 = 1
    /// The customer's app transaction, carried by the transactions added from now on.
    public var appTransactionId: String?
    public var now: Date
    public var period: TimeInterval
    private var counter = 0
    private var uuidSeed: UInt64

    public init(
        environment: AppStoreEnvironment = .production, customer: UUID?, productType: ProductType,
        productId: String, originalTransactionId: String, start: Date, period: TimeInterval = 30 * 86_400, uuidSeed: UInt64 = 1
    ) {
        self.environment = environment
        self.customer = customer
        self.productType = productType
        self.productId = productId
        self.autoRenewProductId = productId
        self.originalTransactionId = originalTransactionId
        self.now = start
        self.period = period
        self.uuidSeed = uuidSeed
    }

    public var isSubscription: Bool { productType == .autoRenewableSubscription }
    public var latest: JWSTransactionDecodedPayload? { transactions.last }

    /// Advances the clock.
    public mutating func advance(_ seconds: TimeInterval) { now = now.addingTimeInterval(seconds) }

    /// Adds a transaction (purchase or renewal) of `product`, starting now.
    public mutating func addTransaction(product: String? = nil, reason: TransactionReason, start: Date? = nil) {
        counter += 1
        let begin = start ?? now
        let id = transactions.isEmpty && counter == 1 ? originalTransactionId : "\(originalTransactionId)-\(counter)"
        let tx = JWSTransactionDecodedPayload(
            originalTransactionId: originalTransactionId, transactionId: id,
            webOrderLineItemId: isSubscription ? "w\(id)" : nil, bundleId: bundleId, productId: product ?? productId,
            subscriptionGroupIdentifier: isSubscription ? groupId : nil, purchaseDate: begin,
            originalPurchaseDate: transactions.first?.purchaseDate ?? begin,
            expiresDate: isSubscription ? begin.addingTimeInterval(period) : nil, quantity: quantity, type: productType,
            appAccountToken: customer, inAppOwnershipType: .purchased, signedDate: now, environment: environment,
            storefront: "USA", storefrontId: "143441", transactionReason: reason, currency: "USD", price: 4990,
            appTransactionId: appTransactionId)
        if let product { productId = product }
        transactions.append(tx)
    }

    /// Sets the latest transaction's revocation (refund, family revoke) or clears it (reversal);
    /// a prorated refund names its share in milliunits (`percentage` 25000 is 25 %).
    public mutating func revokeLatest(_ type: RevocationType?, at date: Date? = nil, percentage: Int32? = nil) {
        guard var tx = transactions.popLast() else { return }
        tx.revocationDate = type == nil ? nil : (date ?? now)
        tx.revocationReason = type == nil ? nil : .refundedDueToIssue
        tx.revocationType = type
        tx.revocationPercentage = type == .refundProrated ? percentage : nil
        tx.signedDate = now
        transactions.append(tx)
    }

    /// Marks the latest transaction as upgraded away (Apple revokes it with `isUpgraded`).
    public mutating func markLatestUpgraded() {
        guard var tx = transactions.popLast() else { return }
        tx.isUpgraded = true
        tx.revocationDate = now
        tx.revocationReason = .refundedForOtherReason
        transactions.append(tx)
    }

    public var renewalInfo: JWSRenewalInfoDecodedPayload? {
        guard isSubscription else { return nil }
        return JWSRenewalInfoDecodedPayload(
            expirationIntent: expirationIntent, originalTransactionId: originalTransactionId,
            autoRenewProductId: autoRenewProductId, productId: productId, autoRenewStatus: autoRenew ? .on : .off,
            isInBillingRetryPeriod: billingRetry, priceIncreaseStatus: priceIncrease, gracePeriodExpiresDate: graceUntil,
            signedDate: now, environment: environment, recentSubscriptionStartDate: transactions.first?.purchaseDate,
            renewalDate: latest?.expiresDate, appAccountToken: customer)
    }

    /// Apple re-assigns the purchase's token (Set App Account Token, or a crossgrade bought under
    /// another account): every transaction and the renewal info carry `customer` from now on.
    public mutating func reassignToken(to customer: UUID) {
        self.customer = customer
        for i in transactions.indices { transactions[i].appAccountToken = customer }
    }

    /// A new notification UUID (deterministic).
    public mutating func nextUUID() -> String {
        uuidSeed = uuidSeed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let hi = uuidSeed
        uuidSeed = uuidSeed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let lo = uuidSeed
        let hex = String(format: "%016llx%016llx", hi, lo)
        let c = Array(hex)
        return "\(String(c[0..<8]))-\(String(c[8..<12]))-4\(String(c[13..<16]))-a\(String(c[17..<20]))-\(String(c[20..<32]))"
    }

    /// `RESCIND_CONSENT` as grant receives it: about the app, not a purchase (`appData` with the
    /// customer's app transaction, nothing for enrich to look up).
    public mutating func rescindConsent() -> EnrichedRecord {
        let uuid = nextUUID()
        let app = AppTransaction(receiptType: environment, appAppleId: 1234, bundleId: bundleId, appTransactionId: appTransactionId)
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .rescindConsent, notificationUUID: uuid,
            appData: AppData(appAppleId: 1234, bundleId: bundleId, environment: environment, signedAppTransactionInfo: "jws.app.\(uuid)"),
            version: "2.0", signedDate: now)
        let verified = VerifiedRecord(
            kind: .notification, source: "apple-webhook", environment: environment, bundleId: bundleId, appAppleId: 1234,
            notificationUUID: uuid, notification: payload, appTransaction: app, signedPayload: "jws.\(uuid)", verifiedAt: now)
        return EnrichedRecord(verified: verified, enrichment: Enrichment(lookup: .none, fetchedAt: now.addingTimeInterval(1)))
    }

    /// The enriched record of the app uploading `transaction` (by default the latest, as signed
    /// now: each upload is then its own event) with its hints, as enrich passes it on: the hint's
    /// token is the enrichment's (`app-hint`) unless Apple's data carries one.
    public func upload(
        _ transaction: JWSTransactionDecodedPayload? = nil, hint: UUID?, userId: String?, authentication: UploadAuthentication?,
        fetchDelay: TimeInterval = 1
    ) -> EnrichedRecord {
        var tx = transaction ?? latest
        if transaction == nil { tx?.signedDate = now }
        let hints = AppUploadHints(appAccountToken: hint, userId: userId, authentication: authentication)
        let verified = VerifiedRecord(
            kind: .transaction, source: "app-upload", environment: environment, bundleId: bundleId, appAppleId: 1234,
            originalTransactionId: originalTransactionId, transactionId: tx?.transactionId, transaction: tx, hints: hints,
            signedTransaction: "h.\(tx?.transactionId ?? "-").s", verifiedAt: now)
        let fetchedAt = now.addingTimeInterval(fetchDelay)
        let history = signedHistory(at: fetchedAt)
        let apple = history.last(where: { $0.appAccountToken != nil })?.appAccountToken ?? tx?.appAccountToken
        let enrichment = Enrichment(
            lookup: .history, history: history, inForceTransactionId: history.last?.transactionId,
            appAccountToken: apple ?? hint, appAccountTokenSource: apple != nil ? .history : (hint != nil ? .appHint : nil),
            fetchedAt: fetchedAt)
        return EnrichedRecord(verified: verified, enrichment: enrichment)
    }

    /// The purchase's transactions as Apple's history answers at `answeredAt`: each signed then
    /// (Apple signs every answer anew), sorted as enrich sorts them.
    func signedHistory(at answeredAt: Date) -> [JWSTransactionDecodedPayload] {
        transactions.map { t -> JWSTransactionDecodedPayload in
            var t = t
            t.signedDate = answeredAt
            return t
        }.sorted { ($0.purchaseDate ?? .distantPast, $0.transactionId ?? "") < ($1.purchaseDate ?? .distantPast, $1.transactionId ?? "") }
    }

    /// The enriched record of a notification Apple sends now.
    /// - Parameters:
    ///   - lookup: `history` for what enrich does with subscriptions and one-time purchases;
    ///     `transactionOnly` for consumables (never in history) or to test the fallback.
    ///   - fetchDelay: how long after the notification enrich fetched the truth.
    public mutating func notify(
        _ type: NotificationType, _ subtype: NotificationSubtype? = nil,
        lookup: Enrichment.Lookup? = nil, fetchDelay: TimeInterval = 1,
        consumptionReason: ConsumptionRequestReason? = nil
    ) -> EnrichedRecord {
        let uuid = nextUUID()
        let lookup = lookup ?? (productType == .consumable ? .transactionOnly : .history)
        var tx = latest
        tx?.signedDate = now
        let renewal = renewalInfo
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: type, subtype: subtype, notificationUUID: uuid,
            data: NotificationData(
                environment: environment, appAppleId: 1234, bundleId: bundleId,
                status: isSubscription ? status : nil, consumptionRequestReason: consumptionReason),
            version: "2.0", signedDate: now)
        let verified = VerifiedRecord(
            kind: .notification, source: "apple-webhook", environment: environment, bundleId: bundleId, appAppleId: 1234,
            originalTransactionId: originalTransactionId, transactionId: tx?.transactionId, notificationUUID: uuid,
            notification: payload, transaction: tx, renewalInfo: renewal, signedPayload: "jws.\(uuid)", verifiedAt: now)
        let fetchedAt = now.addingTimeInterval(fetchDelay)
        let enrichment: Enrichment
        switch lookup {
        case .history:
            let history = signedHistory(at: fetchedAt)
            var statusTx = history.last
            statusTx?.signedDate = fetchedAt
            var statusRenewal = renewal
            statusRenewal?.signedDate = fetchedAt
            enrichment = Enrichment(
                lookup: .history, history: history, inForceTransactionId: history.last?.transactionId,
                subscriptionStatus: isSubscription
                    ? SubscriptionStatusSnapshot(
                        subscriptionGroupIdentifier: groupId, status: status, transaction: statusTx, renewalInfo: statusRenewal)
                    : nil,
                appAccountToken: customer, appAccountTokenSource: customer == nil ? nil : .history, fetchedAt: fetchedAt)
        case .transactionOnly:
            enrichment = Enrichment(
                lookup: .transactionOnly, inForceTransactionId: tx?.transactionId, appAccountToken: customer,
                appAccountTokenSource: customer == nil ? nil : .transaction, fetchedAt: fetchedAt)
        case .none:
            enrichment = Enrichment(lookup: .none, fetchedAt: fetchedAt)
        }
        return EnrichedRecord(verified: verified, enrichment: enrichment)
    }
}

extension SimulatedPurchase {
    /// A monthly subscription bought an hour ago whose transactions carry no `appAccountToken` (an
    /// offer code redeemed in the App Store, say): `owner`'s app uploads it, and ten minutes later
    /// `intruder`, authenticated as another user, uploads the purchase's first copy (signed before
    /// the owner's). The notification and the two uploads, in the order ingest received them.
    public static func claimedByAnother(owner: UUID, intruder: UUID, originalTransactionId: String, uuidSeed: UInt64) -> [EnrichedRecord] {
        var sub = SimulatedPurchase(
            customer: nil, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
            originalTransactionId: originalTransactionId, start: Date().addingTimeInterval(-3600), uuidSeed: uuidSeed)
        sub.addTransaction(reason: .purchase)
        let firstCopy = sub.latest
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(60)
        let upload = sub.upload(hint: owner, userId: "owner-user", authentication: .jwt)
        sub.advance(600)
        let claim = sub.upload(firstCopy, hint: intruder, userId: "intruder-user", authentication: .jwt)
        return [buy, upload, claim]
    }
}
