import Foundation

/// Which entitlements each product grants (several products can grant one entitlement: monthly and
/// yearly both grant `premium`).
///
/// An **unmapped product grants the entitlement named by its own product ID**. A customer who paid
/// is never left with nothing because a mapping was forgotten; the grant is visible under the
/// product ID, and adding the mapping re-keys it on the purchase's next event.
public struct ProductCatalog: Hashable, Sendable, Codable {
    /// One product's entry.
    public struct Product: Hashable, Sendable, Codable {
        /// The entitlement keys the product grants.
        public var entitlements: [String]
        /// For a non-renewing subscription: how long a purchase lasts when Apple's transaction has
        /// no `expiresDate` (it usually has none: the app decides the duration).
        public var durationDays: Int?

        public init(entitlements: [String], durationDays: Int? = nil) {
            self.entitlements = entitlements
            self.durationDays = durationDays
        }
    }

    /// Product ID → entry.
    public var products: [String: Product]

    public init(products: [String: Product] = [:]) {
        self.products = products
    }

    /// The entitlement keys a product grants, sorted, never empty.
    public func entitlements(for productId: String) -> [String] {
        guard let keys = products[productId]?.entitlements, !keys.isEmpty else { return [productId] }
        return Array(Set(keys)).sorted()
    }

    /// The configured duration of a non-renewing product.
    public func durationDays(for productId: String) -> Int? { products[productId]?.durationDays }

    /// Reads the `ENTITLEMENTS_PRODUCTS_FILE` format:
    /// `{"products": {"<productId>": {"entitlements": ["premium"], "durationDays": 30}}}`, or the short
    /// form `{"<productId>": ["premium"]}`.
    public static func parse(_ data: Data) throws(ProductCatalogError) -> ProductCatalog {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ProductCatalogError(problem: "is not a JSON object")
        }
        let entries = (object["products"] as? [String: Any]) ?? object
        var products: [String: Product] = [:]
        for (productId, value) in entries {
            guard !productId.isEmpty else { throw ProductCatalogError(problem: "has an empty product ID") }
            if let keys = value as? [String] {
                products[productId] = try product(productId, keys, nil)
            } else if let entry = value as? [String: Any] {
                guard let keys = entry["entitlements"] as? [String] else {
                    throw ProductCatalogError(problem: "product \(productId) needs an \"entitlements\" array of strings")
                }
                var days: Int?
                if let raw = entry["durationDays"] {
                    guard let d = raw as? Int, d > 0 else {
                        throw ProductCatalogError(problem: "product \(productId) has a durationDays that is not a positive whole number")
                    }
                    days = d
                }
                products[productId] = try product(productId, keys, days)
            } else {
                throw ProductCatalogError(problem: "product \(productId) must map to an array of entitlement keys or an object")
            }
        }
        return ProductCatalog(products: products)
    }

    private static func product(_ id: String, _ keys: [String], _ days: Int?) throws(ProductCatalogError) -> Product {
        guard !keys.isEmpty, keys.allSatisfy({ !$0.isEmpty }) else {
            throw ProductCatalogError(problem: "product \(id) must grant at least one non-empty entitlement key")
        }
        return Product(entitlements: keys, durationDays: days)
    }
}

/// The product mapping file is not valid.
public struct ProductCatalogError: Error, Hashable, Sendable, CustomStringConvertible {
    public let problem: String
    public var description: String { "the product mapping \(problem)" }
}
