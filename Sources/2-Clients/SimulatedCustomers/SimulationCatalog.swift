import AppStore
import Foundation

/// One product of the simulated app, with what the pipeline should grant for it.
public struct SimulatedProduct: Hashable, Sendable {
    public var productId: String
    public var type: ProductType
    /// The subscription group (auto-renewable subscriptions only).
    public var subscriptionGroup: String?
    /// Apple's service level within the group: 1 is the highest.
    public var level: Int?
    /// How many simulated months one period of an auto-renewable subscription lasts.
    public var months: Int?
    /// How many real days a non-renewing pass lasts. Apple's transaction has no end for it: the app
    /// decides, so the pipeline is configured with the same number (grant's products file).
    public var durationDays: Int?
    /// The entitlement the product grants (consumables grant units instead).
    public var entitlement: String
    /// Price in milliunits of `currency`.
    public var price: Int64

    public init(
        productId: String, type: ProductType, subscriptionGroup: String? = nil, level: Int? = nil, months: Int? = nil,
        durationDays: Int? = nil, entitlement: String, price: Int64
    ) {
        self.durationDays = durationDays
        self.productId = productId
        self.type = type
        self.subscriptionGroup = subscriptionGroup
        self.level = level
        self.months = months
        self.entitlement = entitlement
        self.price = price
    }
}

/// The products of the simulated app: two levels of one subscription group (monthly and yearly
/// premium at the top, monthly basic below), a yearly streaming subscription in a group of its own
/// (the one a lifecycle run's mass renewal extension is for: nobody else holds it), a consumable, a
/// non-consumable and a non-renewing pass.
/// The same mapping of products to entitlements is what grant is configured with in local runs.
public struct SimulationCatalog: Hashable, Sendable {
    public var bundleId: String
    public var products: [SimulatedProduct]

    public init(bundleId: String, products: [SimulatedProduct]) {
        self.bundleId = bundleId
        self.products = products
    }

    public func product(_ id: String) -> SimulatedProduct {
        guard let product = products.first(where: { $0.productId == id }) else {
            preconditionFailure("the catalogue has no product \(id)")
        }
        return product
    }

    public static let groupID = "21000001"
    /// The streaming subscription's group.
    public static let streamingGroupID = "21000002"

    public static func standard(bundleId: String = "com.example.entitlements") -> SimulationCatalog {
        let prefix = bundleId
        return SimulationCatalog(
            bundleId: bundleId,
            products: [
                SimulatedProduct(
                    productId: "\(prefix).premium.monthly", type: .autoRenewableSubscription, subscriptionGroup: groupID,
                    level: 1, months: 1, entitlement: "premium", price: 9_990),
                SimulatedProduct(
                    productId: "\(prefix).premium.yearly", type: .autoRenewableSubscription, subscriptionGroup: groupID,
                    level: 1, months: 12, entitlement: "premium", price: 99_990),
                SimulatedProduct(
                    productId: "\(prefix).basic.monthly", type: .autoRenewableSubscription, subscriptionGroup: groupID,
                    level: 2, months: 1, entitlement: "basic", price: 4_990),
                SimulatedProduct(
                    productId: "\(prefix).streaming.yearly", type: .autoRenewableSubscription, subscriptionGroup: streamingGroupID,
                    level: 1, months: 12, entitlement: "streaming", price: 29_990),
                SimulatedProduct(productId: "\(prefix).coins.100", type: .consumable, entitlement: "coins", price: 990),
                SimulatedProduct(productId: "\(prefix).lifetime", type: .nonConsumable, entitlement: "lifetime", price: 49_990),
                SimulatedProduct(
                    productId: "\(prefix).season.pass", type: .nonRenewingSubscription, durationDays: 90, entitlement: "season",
                    price: 14_990),
            ])
    }

    /// The product → entitlement mapping in grant's `ENTITLEMENTS_PRODUCTS_FILE` format.
    public func productsFile() throws -> Data {
        var products: [String: Any] = [:]
        for product in self.products {
            var entry: [String: Any] = ["entitlements": [product.entitlement]]
            if let days = product.durationDays { entry["durationDays"] = days }
            products[product.productId] = entry
        }
        return try JSONSerialization.data(withJSONObject: ["products": products], options: [.sortedKeys, .prettyPrinted])
    }

    public var premiumMonthly: SimulatedProduct { product("\(bundleId).premium.monthly") }
    public var premiumYearly: SimulatedProduct { product("\(bundleId).premium.yearly") }
    public var basicMonthly: SimulatedProduct { product("\(bundleId).basic.monthly") }
    public var streamingYearly: SimulatedProduct { product("\(bundleId).streaming.yearly") }
    public var coins: SimulatedProduct { product("\(bundleId).coins.100") }
    public var lifetime: SimulatedProduct { product("\(bundleId).lifetime") }
    public var seasonPass: SimulatedProduct { product("\(bundleId).season.pass") }
}
