import AppStore
import Foundation

/// The operator's choices that shape decisions: product mapping, expiry leeway, transfer policy.
public struct GrantPolicy: Hashable, Sendable {
    /// What happens when a second customer claims a purchase another customer owns.
    public enum TransferPolicy: String, Hashable, Sendable, CaseIterable, Codable {
        /// The first claim (earliest signed) keeps the purchase; later claims are recorded and refused.
        case refuse
        /// The latest claim takes the purchase over; the previous owner loses what it granted.
        case allow
    }

    /// What a prorated refund (`revocationType` `REFUND_PRORATED`) does to a product that is not a
    /// consumable; a consumable always loses the refunded share of its quantity.
    public enum ProratedRefundPolicy: String, Hashable, Sendable, CaseIterable, Codable {
        /// Access ends at Apple's `revocationDate`, as for a full refund (Apple's rule).
        case revoke
        /// Access is kept: the customer paid for part of it.
        case keep
    }

    /// What a `RESCIND_CONSENT` (a parent withdrew consent for a child's use of the app) does to
    /// the customer it names, besides the `consent_rescinded` change.
    public enum RescindedConsentPolicy: String, Hashable, Sendable, CaseIterable, Codable {
        /// Access is left as it is: the app's own policy decides.
        case notify
        /// Every entitlement of the customer becomes inactive (reason `consent_rescinded`) and
        /// stays so whatever Apple says of their purchases later; consumable balances are kept.
        case suspend
    }

    public var catalog: ProductCatalog
    /// How long access runs on past `expiresDate` while a renewal is expected (auto-renew on, not
    /// in billing retry), so processing delay never costs a paying customer access.
    public var expiryLeeway: TimeInterval
    public var transferPolicy: TransferPolicy
    public var proratedRefund: ProratedRefundPolicy
    public var rescindedConsent: RescindedConsentPolicy

    public init(
        catalog: ProductCatalog = ProductCatalog(), expiryLeeway: TimeInterval = 3600, transferPolicy: TransferPolicy = .refuse,
        proratedRefund: ProratedRefundPolicy = .revoke, rescindedConsent: RescindedConsentPolicy = .notify
    ) {
        self.rescindedConsent = rescindedConsent
        self.catalog = catalog
        self.expiryLeeway = expiryLeeway
        self.transferPolicy = transferPolicy
        self.proratedRefund = proratedRefund
    }

    /// Whether `transaction`'s revocation ends access: always, except a prorated refund of a
    /// product other than a consumable when the policy keeps access.
    public func revokes(_ transaction: JWSTransactionDecodedPayload) -> Bool {
        guard transaction.revocationDate != nil else { return false }
        return !(proratedRefund == .keep && transaction.revocationType == .refundProrated && transaction.type != .consumable)
    }
}
