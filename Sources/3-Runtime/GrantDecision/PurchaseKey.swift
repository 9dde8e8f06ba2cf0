import Foundation

/// Names one purchase: its ``purchaseId`` within one environment.
///
/// Transaction identifiers are unique only inside an environment, and Sandbox data must never
/// grant Production access, so every key in grant's state carries the environment.
public struct PurchaseKey: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`, as Apple spells it.
    public var environment: String
    /// The purchase's id: Apple's `originalTransactionId`; a consumable's own `transactionId` (each
    /// consumable bought is a purchase of its own; Apple gives a consumable an `originalTransactionId`
    /// equal to its `transactionId`, as only restores and renewals differ). The columns and JSON
    /// members that hold it keep the name `originalTransactionId` / `original_transaction_id`.
    public var purchaseId: String

    /// Stored as `{"environment", "originalTransactionId"}` in a purchase's state
    /// (`subscriptions.state`, read by grant_write and every release since), so the name stays.
    enum CodingKeys: String, CodingKey {
        case environment
        case purchaseId = "originalTransactionId"
    }

    public init(environment: String, purchaseId: String) {
        self.environment = environment
        self.purchaseId = purchaseId
    }

    public static func < (a: PurchaseKey, b: PurchaseKey) -> Bool {
        (a.environment, a.purchaseId) < (b.environment, b.purchaseId)
    }

    public var description: String { "\(environment):\(purchaseId)" }
}

/// Names one customer: the `appAccountToken` the app set at purchase, within one environment.
public struct CustomerKey: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    public var environment: String
    public var customerId: UUID

    public init(environment: String, customerId: UUID) {
        self.environment = environment
        self.customerId = customerId
    }

    /// Environment, then the UUID's bytes: the order of its text and of Postgres's `uuid` (lock order),
    /// without formatting a string per comparison.
    public static func < (a: CustomerKey, b: CustomerKey) -> Bool {
        if a.environment != b.environment { return a.environment < b.environment }
        return withUnsafeBytes(of: a.customerId.uuid) { x in
            withUnsafeBytes(of: b.customerId.uuid) { y in x.lexicographicallyPrecedes(y) }
        }
    }

    public var description: String { "\(environment):\(customerId.uuidString.lowercased())" }
}
