import AppStore
import Foundation

/// One simulated customer: who they are, the lifecycle they go through, and where they should end.
public struct SimulatedCustomer: Sendable {
    public var index: Int
    /// The customer as the backend knows them: the purchase's `appAccountToken`, or, for a purchase
    /// made without one, the token the app uploads with it.
    public var customer: UUID
    public var scenario: LifecycleScenario
    public var ownership: InAppOwnershipType
    /// Customers whose token Apple's records carried before Apple re-assigned it: they must end
    /// with nothing from this purchase.
    public var formerCustomers: [UUID]
    /// Apple's records and what Apple sends, in time order.
    public var steps: [LifecycleStep]
    /// The active entitlements at the horizon.
    public var expected: [ExpectedEntitlement]
    /// Consumable units bought and not refunded, per product.
    public var consumableUnits: [String: Int]
    /// Every transaction in its final state, for seeding the simulated Apple's history.
    public var transactions: [JWSTransactionDecodedPayload]
}

/// Generates customers and their lifecycles on a compressed clock (one simulated month lasts
/// ``month`` seconds, as in Apple's sandbox where a month lasts minutes), deterministically from a
/// seed. Every lifecycle ends before ``horizon``; the expected entitlements are those at the horizon,
/// and stay true for at least 0.3 months after it.
public struct LifecycleSimulation: Sendable {
    public var catalog: SimulationCatalog
    public var month: TimeInterval
    public var horizon: Date
    public var seed: UInt64

    public init(catalog: SimulationCatalog = .standard(), month: TimeInterval, horizon: Date, seed: UInt64) {
        self.catalog = catalog
        self.month = month
        self.horizon = horizon
        self.seed = seed
    }

    /// `count` customers; scenarios take turns in ``LifecycleScenario/rotation``'s order.
    /// Transaction IDs follow from a customer's index, so runs into one simulator or database keep
    /// their purchases apart by starting at different indexes (`firstIndex`).
    public func customers(
        _ count: Int, firstIndex: Int = 0, scenarios: [LifecycleScenario] = LifecycleScenario.rotation
    ) -> [SimulatedCustomer] {
        var random = SplitMix64(seed: seed)
        return (firstIndex..<firstIndex + count).map { index in
            let scenario = scenarios[(index - firstIndex) % scenarios.count]
            let customer = random.uuid()
            let former = scenario == .tokenReassigned ? random.uuid() : nil
            let ownership = scenario.ownership
            var builder = CustomerLifecycleBuilder(
                catalog: catalog, customerIndex: index, appAccountToken: scenario.initialToken(customer: customer, former: former),
                ownership: ownership, month: month)
            scenario.play(into: &builder, horizon: horizon, customer: customer, jitter: random.unit())
            return SimulatedCustomer(
                index: index, customer: customer, scenario: scenario, ownership: ownership, formerCustomers: former.map { [$0] } ?? [],
                steps: builder.steps,
                expected: builder.expectedEntitlements(for: customer, at: horizon),
                consumableUnits: builder.consumableUnits(),
                transactions: builder.transactions.values.sorted { $0.purchaseDate! < $1.purchaseDate! })
        }
    }
}

/// A small, fast, seedable generator (SplitMix64): the same seed gives the same customers anywhere.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<1.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// A version-4 UUID from the generator.
    public mutating func uuid() -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in stride(from: 0, to: 16, by: 8) {
            withUnsafeBytes(of: next()) { for (j, b) in $0.enumerated() { bytes[i + j] = b } }
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
