import Foundation

/// Decoded, verified renewal information of an auto-renewable subscription.
///
/// It carries no bundle identifier; the verifier checks its environment (and, inside a notification,
/// that it matches the notification's). Prices are in milliunits.
/// See https://developer.apple.com/documentation/appstoreserverapi/jwsrenewalinfodecodedpayload
public struct JWSRenewalInfoDecodedPayload: Codable, Hashable, Sendable {
    /// Why the subscription expired.
    public var expirationIntent: ExpirationIntent?
    /// The subscription's original transaction identifier.
    public var originalTransactionId: String?
    /// The product that renews next.
    public var autoRenewProductId: String?
    /// The current product.
    public var productId: String?
    /// Whether the subscription renews automatically.
    public var autoRenewStatus: AutoRenewStatus?
    /// Whether Apple is still trying to bill the customer.
    public var isInBillingRetryPeriod: Bool?
    /// Whether the customer consented to a price increase.
    public var priceIncreaseStatus: PriceIncreaseStatus?
    /// When the billing grace period ends.
    public var gracePeriodExpiresDate: Date?
    /// The offer that applies to the next renewal.
    public var offerType: OfferType?
    /// The offer's identifier.
    public var offerIdentifier: String?
    /// When Apple signed this renewal info.
    public var signedDate: Date?
    /// Sandbox or Production.
    public var environment: AppStoreEnvironment?
    /// Start of the current run of the subscription (lapses under 60 days ignored).
    public var recentSubscriptionStartDate: Date?
    /// When the subscription renews next.
    public var renewalDate: Date?
    /// ISO 4217 currency of ``renewalPrice``.
    public var currency: String?
    /// Next renewal's price in milliunits of ``currency``.
    public var renewalPrice: Int64?
    /// Payment mode of the offer.
    public var offerDiscountType: OfferDiscountType?
    /// Win-back offers the customer can redeem.
    public var eligibleWinBackOfferIds: [String]?
    /// The customer identifier the app set at purchase, if any.
    public var appAccountToken: UUID?
    /// The app download's transaction identifier.
    public var appTransactionId: String?
    /// ISO 8601 duration of the offer.
    public var offerPeriod: String?
    /// Advanced Commerce API details, kept verbatim.
    public var advancedCommerceInfo: JSONValue?
    /// Commitment plan details.
    public var commitmentInfo: RenewalCommitmentInfo?
    /// How the next period is billed.
    public var renewalBillingPlanType: BillingPlanType?

    public init(
        expirationIntent: ExpirationIntent? = nil,
        originalTransactionId: String? = nil,
        autoRenewProductId: String? = nil,
        productId: String? = nil,
        autoRenewStatus: AutoRenewStatus? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        priceIncreaseStatus: PriceIncreaseStatus? = nil,
        gracePeriodExpiresDate: Date? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        signedDate: Date? = nil,
        environment: AppStoreEnvironment? = nil,
        recentSubscriptionStartDate: Date? = nil,
        renewalDate: Date? = nil,
        currency: String? = nil,
        renewalPrice: Int64? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        eligibleWinBackOfferIds: [String]? = nil,
        appAccountToken: UUID? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil,
        advancedCommerceInfo: JSONValue? = nil,
        commitmentInfo: RenewalCommitmentInfo? = nil,
        renewalBillingPlanType: BillingPlanType? = nil
    ) {
        self.expirationIntent = expirationIntent
        self.originalTransactionId = originalTransactionId
        self.autoRenewProductId = autoRenewProductId
        self.productId = productId
        self.autoRenewStatus = autoRenewStatus
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.priceIncreaseStatus = priceIncreaseStatus
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.signedDate = signedDate
        self.environment = environment
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalDate = renewalDate
        self.currency = currency
        self.renewalPrice = renewalPrice
        self.offerDiscountType = offerDiscountType
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.appAccountToken = appAccountToken
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.advancedCommerceInfo = advancedCommerceInfo
        self.commitmentInfo = commitmentInfo
        self.renewalBillingPlanType = renewalBillingPlanType
    }
}
