import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import PostgresNIO
import Testing

@testable import EntitlementStore

/// `GRANT_RESCINDED_CONSENT=suspend`: the customer a `RESCIND_CONSENT` names loses every active
/// entitlement and gets none back while the suspension lasts.
@Suite("Consent rescinded, access suspended, against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct ConsentSuspensionTests {
    static let policy: GrantPolicy = {
        var policy = generatorPolicy
        policy.rescindedConsent = .suspend
        return policy
    }()

    /// A subscription of `customer` carrying `appTransactionId`, and its `SUBSCRIBED` notification.
    func subscription(_ customer: UUID, appTransactionId: String, id: String, seed: UInt64) -> (SimulatedPurchase, EnrichedRecord) {
        var sub = SimulatedPurchase(
            customer: customer, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly, originalTransactionId: id,
            start: Date().addingTimeInterval(-3600), uuidSeed: seed)
        sub.appTransactionId = appTransactionId
        sub.addTransaction(reason: .purchase)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(600)
        return (sub, buy)
    }

    /// The customer's changes in their stream's order: `change:sourceId:reason`.
    func stream(_ db: ScratchDatabase, _ customer: UUID) async throws -> [String] {
        let rows = try await db.client.query(
            "SELECT change, source_id, reason FROM entitlement_changes WHERE customer_id = \(customer) ORDER BY seq", logger: ScratchDatabase.logger)
        var out: [String] = []
        for try await (change, source, reason) in rows.decode((String, String, String).self) { out.append("\(change):\(source):\(reason)") }
        return out
    }

    func activeRows(_ db: ScratchDatabase, _ customer: UUID) async throws -> Int {
        try await db.count("SELECT count(*) FROM entitlements WHERE customer_id = '\(customer.uuidString)' AND active")
    }

    @Test("a known customer's rescind revokes every active entitlement, those of purchases outside the batch too, and renewals grant nothing")
    func customerKnown() async throws {
        let customer = UUID()
        let (bought, firstBuy) = subscription(customer, appTransactionId: "704000000000000021", id: "suspend-1", seed: 51)
        let secondBuy = subscription(customer, appTransactionId: "704000000000000021", id: "suspend-2", seed: 52).1
        var first = bought
        let rescind = first.rescindConsent()
        first.addTransaction(reason: .renewal)
        let renewal = first.notify(.didRenew)
        try await ScratchDatabase.with { db in
            _ = try await applyAll([firstBuy, secondBuy], db.store, policy: Self.policy)
            #expect(try await activeRows(db, customer) == 2)

            let decisions = try await applyAll([rescind], db.store, policy: Self.policy)
            #expect(decisions.map(\.outcome) == [.recorded])
            #expect(try await activeRows(db, customer) == 0, "both purchases suspended, neither was in the rescind's batch")
            #expect(
                try await stream(db, customer) == [
                    "granted:suspend-1:active", "granted:suspend-2:active", "consent_rescinded:704000000000000021:consent_rescinded",
                    "revoked:suspend-1:consent_rescinded", "revoked:suspend-2:consent_rescinded",
                ])

            // Apple renews the subscription: it stays suspended, and nothing is published.
            let renewed = try await applyAll([renewal, rescind], db.store, policy: Self.policy)
            #expect(renewed.map(\.outcome) == [.applied, .duplicate])
            #expect(renewed.allSatisfy { $0.changes.isEmpty })
            #expect(try await activeRows(db, customer) == 0)
            #expect(try await stream(db, customer).count == 5)
            #expect(try await db.count("SELECT count(*) FROM entitlements WHERE reason = 'consent_rescinded'") == 2)
        }
    }

    @Test("a rescind waiting for its purchase suspends the customer in the batch that decides it; under notify access is kept")
    func rescindFirst() async throws {
        let customer = UUID()
        let (bought, buy) = subscription(customer, appTransactionId: "704000000000000022", id: "suspend-3", seed: 53)
        var sub = bought
        let rescind = sub.rescindConsent()
        try await ScratchDatabase.with { db in
            _ = try await applyAll([rescind], db.store, policy: Self.policy)
            _ = try await applyAll([buy], db.store, policy: Self.policy)
            #expect(try await activeRows(db, customer) == 0)
            #expect(
                try await stream(db, customer) == [
                    "granted:suspend-3:active", "consent_rescinded:704000000000000022:consent_rescinded", "revoked:suspend-3:consent_rescinded",
                ])
        }
        try await ScratchDatabase.with { db in
            _ = try await applyAll([rescind, buy], db.store, policy: generatorPolicy)
            #expect(try await activeRows(db, customer) == 1, "the default policy only tells")
        }
    }
}
