import Foundation

/// Where a purchase stands in its life, derived from Apple's status and transaction.
public enum Lifecycle: String, Hashable, Codable, Sendable, CaseIterable {
    /// Paid and current (for one-time purchases: owned).
    case active
    /// Billing failed, Apple retries, the customer keeps access until the grace period ends.
    case gracePeriod = "grace_period"
    /// Billing failed and no grace applies (or it ended): access stops while Apple retries.
    case billingRetry = "billing_retry"
    /// The subscription ended.
    case expired
    /// Refunded or revoked (including Family Sharing revocation): access ends.
    case revoked

    /// Whether this state gives access (until the entitlement's end date).
    public var grantsAccess: Bool { self == .active || self == .gracePeriod }
}

/// Grant's state of one purchase (one row of `subscriptions`): every field the decision needs,
/// and the guard that keeps it monotonic (``version``).
public struct PurchaseState: Hashable, Codable, Sendable {
    public var key: PurchaseKey
    /// Apple's product type, as spelled by Apple.
    public var productType: String
    /// The product in force (of the newest transaction by `purchaseDate`).
    public var productId: String
    /// The product the subscription renews into (differs after a downgrade or crossgrade).
    public var autoRenewProductId: String?
    public var autoRenewEnabled: Bool?
    public var lifecycle: Lifecycle
    /// Apple's numeric status (1–5) when Apple gave one.
    public var appleStatus: Int?
    /// The in-force transaction's `purchaseDate`.
    public var purchaseDate: Date?
    public var originalPurchaseDate: Date?
    /// The renewal info's `recentSubscriptionStartDate` (start of the current unbroken run).
    public var recentSubscriptionStartDate: Date?
    public var expiresAt: Date?
    public var gracePeriodExpiresAt: Date?
    public var isInBillingRetry: Bool
    public var priceIncreaseStatus: Int?
    public var expirationIntent: Int?
    public var revokedAt: Date?
    public var revocationReason: Int?
    public var revocationType: String?
    /// True when the transaction in force was upgraded away (its successor is not known yet).
    public var isUpgraded: Bool = false
    public var latestTransactionId: String?
    public var subscriptionGroupId: String?
    /// Every customer that claimed the purchase; the owner is derived from them (``owner(policy:)``).
    public var claims: [OwnershipClaim]
    /// The newest event whose facts this state holds.
    public var version: EventVersion
    /// The newest `signedDate` among applied events (audit; the guard is ``version``).
    public var lastSignedDate: Date?
    /// The event that last changed the state.
    public var lastEventKey: String

    public init(
        key: PurchaseKey, productType: String, productId: String, autoRenewProductId: String? = nil,
        autoRenewEnabled: Bool? = nil, lifecycle: Lifecycle, appleStatus: Int? = nil, purchaseDate: Date? = nil,
        expiresAt: Date? = nil, gracePeriodExpiresAt: Date? = nil, isInBillingRetry: Bool = false,
        priceIncreaseStatus: Int? = nil, expirationIntent: Int? = nil, revokedAt: Date? = nil,
        revocationReason: Int? = nil, revocationType: String? = nil, latestTransactionId: String? = nil,
        subscriptionGroupId: String? = nil, claims: [OwnershipClaim] = [], version: EventVersion,
        lastSignedDate: Date? = nil, lastEventKey: String
    ) {
        self.key = key
        self.productType = productType
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewEnabled = autoRenewEnabled
        self.lifecycle = lifecycle
        self.appleStatus = appleStatus
        self.purchaseDate = purchaseDate
        self.expiresAt = expiresAt
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.isInBillingRetry = isInBillingRetry
        self.priceIncreaseStatus = priceIncreaseStatus
        self.expirationIntent = expirationIntent
        self.revokedAt = revokedAt
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.latestTransactionId = latestTransactionId
        self.subscriptionGroupId = subscriptionGroupId
        self.claims = claims
        self.version = version
        self.lastSignedDate = lastSignedDate
        self.lastEventKey = lastEventKey
    }

    /// The customer the purchase belongs to under `policy`, if any customer claimed it.
    public func owner(policy: GrantPolicy.TransferPolicy) -> UUID? {
        OwnershipClaim.owner(of: claims, policy: policy)
    }

    /// Where `claim` stands among the purchase's claims under `policy` (``OwnershipClaim`` has the rule).
    public func status(of claim: OwnershipClaim, policy: GrantPolicy.TransferPolicy) -> OwnershipClaim.Status {
        OwnershipClaim.status(of: claim, among: claims, policy: policy)
    }
}
