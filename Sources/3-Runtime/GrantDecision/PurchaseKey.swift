import Foundation

/// Names one purchase: an `originalTransactionId` within one environment.
///
/// Transaction identifiers are unique only inside an environment, and Sandbox data must never
/// grant Production access, so every key in grant's state carries the environment.
public struct PurchaseKey: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`, as Apple spells it.
    public var environment: String
    /// The purchase's `originalTransactionId` (for a consumable, its own `transactionId`).
    public var originalTransactionId: String

    public init(environment: String, originalTransactionId: String) {
        self.environment = environment
        self.originalTransactionId = originalTransactionId
    }

    public static func < (a: PurchaseKey, b: PurchaseKey) -> Bool {
        (a.environment, a.originalTransactionId) < (b.environment, b.originalTransactionId)
    }

    public var description: String { "\(environment):\(originalTransactionId)" }
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
