import AppStore
import Foundation

/// Apple's `HistoryResponse` (Get Transaction History v2): one page of ≤ 20 signed transactions.
public struct HistoryResponse: Codable, Hashable, Sendable {
    public var revision: String?
    public var hasMore: Bool?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: AppStoreEnvironment?
    public var signedTransactions: [String]?

    public init(
        revision: String?, hasMore: Bool?, bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?,
        signedTransactions: [String]?
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
}

/// The `productType` filter values of Get Transaction History (not the transaction's `type` strings).
public enum HistoryProductType: String, Codable, CaseIterable, Hashable, Sendable {
    case autoRenewable = "AUTO_RENEWABLE"
    case nonRenewable = "NON_RENEWABLE"
    case consumable = "CONSUMABLE"
    case nonConsumable = "NON_CONSUMABLE"

    /// The filter value matching a transaction's type.
    public init?(_ type: ProductType?) {
        switch type {
        case .autoRenewableSubscription: self = .autoRenewable
        case .nonRenewingSubscription: self = .nonRenewable
        case .consumable: self = .consumable
        case .nonConsumable: self = .nonConsumable
        default: return nil
        }
    }
}

/// The query of Get Transaction History v2. Different filters are ANDed; several values of one
/// filter are ORed. `sort` orders by Apple's modification date, not by purchase date.
public struct TransactionHistoryQuery: Hashable, Sendable {
    public enum Sort: String, Hashable, Sendable {
        case ascending = "ASCENDING"
        case descending = "DESCENDING"
    }

    public var startDate: Date?
    public var endDate: Date?
    public var productIds: [String]
    public var productTypes: [HistoryProductType]
    public var sort: Sort?
    public var subscriptionGroupIdentifiers: [String]
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var inAppOwnershipType: String?
    /// `true`: only revoked; `false`: only not revoked; `nil`: both.
    public var revoked: Bool?

    public init(
        startDate: Date? = nil, endDate: Date? = nil, productIds: [String] = [], productTypes: [HistoryProductType] = [],
        sort: Sort? = nil, subscriptionGroupIdentifiers: [String] = [], inAppOwnershipType: String? = nil, revoked: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.productIds = productIds
        self.productTypes = productTypes
        self.sort = sort
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.inAppOwnershipType = inAppOwnershipType
        self.revoked = revoked
    }

    /// The query items, with `revision` when continuing.
    public func items(revision: String?) -> [(String, String)] {
        var items: [(String, String)] = []
        if let revision { items.append(("revision", revision)) }
        if let startDate { items.append(("startDate", "\(AppStoreJSON.milliseconds(since1970: startDate))")) }
        if let endDate { items.append(("endDate", "\(AppStoreJSON.milliseconds(since1970: endDate))")) }
        items += productIds.map { ("productId", $0) }
        items += productTypes.map { ("productType", $0.rawValue) }
        if let sort { items.append(("sort", sort.rawValue)) }
        items += subscriptionGroupIdentifiers.map { ("subscriptionGroupIdentifier", $0) }
        if let inAppOwnershipType { items.append(("inAppOwnershipType", inAppOwnershipType)) }
        if let revoked { items.append(("revoked", revoked ? "true" : "false")) }
        return items
    }
}
