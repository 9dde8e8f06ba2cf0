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

    public var catalog: ProductCatalog
    /// How long access runs on past `expiresDate` while a renewal is expected (auto-renew on, not
    /// in billing retry), so processing delay never costs a paying customer access.
    public var expiryLeeway: TimeInterval
    public var transferPolicy: TransferPolicy

    public init(catalog: ProductCatalog = ProductCatalog(), expiryLeeway: TimeInterval = 3600, transferPolicy: TransferPolicy = .refuse) {
        self.catalog = catalog
        self.expiryLeeway = expiryLeeway
        self.transferPolicy = transferPolicy
    }
}
