import Foundation

/// Where an entitlement comes from.
public enum EntitlementSource: String, Hashable, Codable, Sendable {
    case autoRenewable = "auto_renewable"
    case nonConsumable = "non_consumable"
    case nonRenewing = "non_renewing"
}

/// One row of `entitlements`: a customer's entitlement from one purchase. Rows are never deleted;
/// a lost entitlement stays as an inactive row with its reason, so support can answer "why not?".
public struct EntitlementGrant: Hashable, Codable, Sendable {
    public struct ID: Hashable, Comparable, Codable, Sendable {
        public var customer: CustomerKey
        public var entitlementKey: String
        /// The purchase (``PurchaseKey/purchaseId``: its `originalTransactionId`, a consumable's `transactionId`).
        public var sourceId: String

        public init(customer: CustomerKey, entitlementKey: String, sourceId: String) {
            self.customer = customer
            self.entitlementKey = entitlementKey
            self.sourceId = sourceId
        }

        public static func < (a: ID, b: ID) -> Bool {
            (a.customer, a.entitlementKey, a.sourceId) < (b.customer, b.entitlementKey, b.sourceId)
        }
    }

    public var id: ID
    public var source: EntitlementSource
    public var productId: String
    /// Whether the purchase gives access; the customer is entitled while this is true and
    /// ``activeUntil`` is absent or in the future.
    public var active: Bool
    public var activeFrom: Date?
    /// The end of access (expiry, plus leeway when a renewal is expected, or the grace period's end);
    /// nil for a purchase that never ends.
    public var activeUntil: Date?
    /// Why the row is as it is: the purchase's lifecycle or what took it away
    /// (`active`, `grace_period`, `billing_retry`, `expired`, `refunded`, `family_revoked`,
    /// `product_changed`, `transferred`).
    public var reason: String

    public init(id: ID, source: EntitlementSource, productId: String, active: Bool, activeFrom: Date?, activeUntil: Date?, reason: String) {
        self.id = id
        self.source = source
        self.productId = productId
        self.active = active
        self.activeFrom = activeFrom?.wholeMilliseconds
        self.activeUntil = activeUntil?.wholeMilliseconds
        self.reason = reason
    }
}

/// One row of `consumable_grants`: a consumable's transaction granted to a customer, and its
/// revocation when refunded.
public struct ConsumableGrant: Hashable, Codable, Sendable {
    public var key: PurchaseKey
    public var transactionId: String { key.purchaseId }
    public var customer: CustomerKey?
    public var productId: String
    public var entitlementKeys: [String]
    public var quantity: Int
    public var purchasedAt: Date?
    public var revokedAt: Date?
    public var revocationReason: Int?
    public var version: EventVersion

    public init(
        key: PurchaseKey, customer: CustomerKey?, productId: String, entitlementKeys: [String], quantity: Int,
        purchasedAt: Date?, revokedAt: Date?, revocationReason: Int?, version: EventVersion
    ) {
        self.key = key
        self.customer = customer
        self.productId = productId
        self.entitlementKeys = entitlementKeys
        self.quantity = quantity
        self.purchasedAt = purchasedAt?.wholeMilliseconds
        self.revokedAt = revokedAt?.wholeMilliseconds
        self.revocationReason = revocationReason
        self.version = version
    }

    /// Granted and not revoked.
    public var isGranted: Bool { customer != nil && revokedAt == nil }
}
