import Foundation
import PipelineRecords

/// One change of what a customer is entitled to: written to `entitlement_changes` and, with a
/// per-customer sequence number, to the outbox.
public struct EntitlementChange: Hashable, Codable, Sendable {
    public enum Kind: String, Hashable, Codable, Sendable, CaseIterable {
        /// Access starts (or comes back: renewal after expiry, billing recovery, refund reversal).
        case granted
        /// Access ends before its time (refund, revocation, billing retry, expiry, upgrade, transfer).
        case revoked
        /// Access runs longer (renewal, grace period, extension).
        case extended
        /// Access ends earlier than it did (auto-renew turned off removes the leeway).
        case shortened
        /// A consumable was delivered.
        case consumableGranted = "consumable_granted"
        /// A delivered consumable was refunded.
        case consumableRevoked = "consumable_revoked"
        /// A delivered consumable's quantity changed: a prorated refund took part of it, or its
        /// reversal gave it back (`quantity` is what the customer holds now).
        case consumableAdjusted = "consumable_adjusted"
        /// A parent withdrew consent for the child's use of the app (`RESCIND_CONSENT`). About the
        /// customer, not a purchase: ``EntitlementChange/consentEntitlementKey``, `sourceId` the app
        /// transaction, `productId` empty; `active` says whether the customer's access goes on.
        case consentRescinded = "consent_rescinded"
    }

    /// The `entitlementKey` of a ``Kind/consentRescinded`` change: no entitlement of the catalogue
    /// is called so, and consumers keep it apart from their products.
    public static let consentEntitlementKey = "consent"

    public var kind: Kind
    public var customer: CustomerKey
    public var entitlementKey: String
    /// The purchase (`originalTransactionId`, or the consumable's `transactionId`).
    public var sourceId: String
    public var productId: String
    public var active: Bool
    public var activeUntil: Date?
    /// The reason of the row after the change (see ``EntitlementGrant/reason``).
    public var reason: String
    public var quantity: Int?
    public var cause: GrantCause

    public init(
        kind: Kind, customer: CustomerKey, entitlementKey: String, sourceId: String, productId: String, active: Bool, activeUntil: Date?,
        reason: String, quantity: Int? = nil, cause: GrantCause
    ) {
        self.kind = kind
        self.customer = customer
        self.entitlementKey = entitlementKey
        self.sourceId = sourceId
        self.productId = productId
        self.active = active
        self.activeUntil = activeUntil
        self.reason = reason
        self.quantity = quantity
        self.cause = cause
    }
}

extension EntitlementChange {
    /// The change that tells the services downstream that `customer`'s parent withdrew consent for the
    /// app (`RESCIND_CONSENT` about `appTransactionId`). Access is untouched (`active` true).
    public static func consentRescinded(customer: CustomerKey, appTransactionId: String, cause: GrantCause) -> EntitlementChange {
        EntitlementChange(
            kind: .consentRescinded, customer: customer, entitlementKey: consentEntitlementKey, sourceId: appTransactionId, productId: "",
            active: true, activeUntil: nil, reason: "consent_rescinded", cause: cause)
    }
}
