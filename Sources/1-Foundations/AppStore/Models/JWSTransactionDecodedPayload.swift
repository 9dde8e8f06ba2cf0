import Foundation

/// A decoded, verified App Store transaction.
///
/// Every field is optional because Apple omits fields per product type. Prices are in milliunits
/// (1990 = 1.99) of ``currency``.
/// See https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload
public struct JWSTransactionDecodedPayload: Codable, Hashable, Sendable {
    /// Stable across renewals and restores: the key of one subscription or purchase.
    public var originalTransactionId: String?
    /// This transaction's identifier.
    public var transactionId: String?
    /// Subscription purchase events across devices; subscriptions only.
    public var webOrderLineItemId: String?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The purchased product.
    public var productId: String?
    /// The subscription group; subscriptions only.
    public var subscriptionGroupIdentifier: String?
    /// When the App Store charged the customer (or the renewal date).
    public var purchaseDate: Date?
    /// When the original purchase happened.
    public var originalPurchaseDate: Date?
    /// When the subscription expires or renews; subscriptions only.
    public var expiresDate: Date?
    /// Number of consumables bought.
    public var quantity: Int32?
    /// The product type.
    public var type: ProductType?
    /// The customer identifier the app set at purchase, if any.
    public var appAccountToken: UUID?
    /// Purchased or family shared.
    public var inAppOwnershipType: InAppOwnershipType?
    /// When Apple signed this transaction.
    public var signedDate: Date?
    /// Why Apple refunded or revoked it; with ``revocationDate``.
    public var revocationReason: RevocationReason?
    /// When Apple refunded or revoked it.
    public var revocationDate: Date?
    /// Whether the customer upgraded to another subscription.
    public var isUpgraded: Bool?
    /// The subscription offer applied.
    public var offerType: OfferType?
    /// The offer code or promotional offer identifier.
    public var offerIdentifier: String?
    /// Sandbox or Production; absent in very old (2021) transactions.
    public var environment: AppStoreEnvironment?
    /// ISO 3166-1 alpha-3 storefront, for example `USA`.
    public var storefront: String?
    /// Apple's storefront identifier, for example `143441`.
    public var storefrontId: String?
    /// Purchase or renewal.
    public var transactionReason: TransactionReason?
    /// ISO 4217 currency of ``price``.
    public var currency: String?
    /// Price in milliunits of ``currency``.
    public var price: Int64?
    /// Payment mode of the offer.
    public var offerDiscountType: OfferDiscountType?
    /// The app download's transaction identifier.
    public var appTransactionId: String?
    /// ISO 8601 duration of the offer.
    public var offerPeriod: String?
    /// How the transaction was revoked.
    public var revocationType: RevocationType?
    /// Refunded share in milliunits (100000 = 100 %).
    public var revocationPercentage: Int32?
    /// Advanced Commerce API details, kept verbatim.
    public var advancedCommerceInfo: JSONValue?
    /// How the subscription is billed.
    public var billingPlanType: BillingPlanType?
    /// Commitment plan details.
    public var commitmentInfo: TransactionCommitmentInfo?

    public init(
        originalTransactionId: String? = nil,
        transactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        purchaseDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        expiresDate: Date? = nil,
        quantity: Int32? = nil,
        type: ProductType? = nil,
        appAccountToken: UUID? = nil,
        inAppOwnershipType: InAppOwnershipType? = nil,
        signedDate: Date? = nil,
        revocationReason: RevocationReason? = nil,
        revocationDate: Date? = nil,
        isUpgraded: Bool? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        storefront: String? = nil,
        storefrontId: String? = nil,
        transactionReason: TransactionReason? = nil,
        currency: String? = nil,
        price: Int64? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil,
        revocationType: RevocationType? = nil,
        revocationPercentage: Int32? = nil,
        advancedCommerceInfo: JSONValue? = nil,
        billingPlanType: BillingPlanType? = nil,
        commitmentInfo: TransactionCommitmentInfo? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.revocationDate = revocationDate
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.transactionReason = transactionReason
        self.currency = currency
        self.price = price
        self.offerDiscountType = offerDiscountType
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.advancedCommerceInfo = advancedCommerceInfo
        self.billingPlanType = billingPlanType
        self.commitmentInfo = commitmentInfo
    }
}
