import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import Testing

@testable import EntitlementStore

/// `RESCIND_CONSENT` on the change stream: one `consent_rescinded` change for the customer who owns
/// a purchase carrying the app transaction it names, whichever arrives first.
@Suite("Consent rescinded against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct ConsentRescindTests {
    /// A subscription of `customer` carrying `appTransactionId`, and its `SUBSCRIBED` notification.
    func subscription(_ customer: UUID?, appTransactionId: String, seed: UInt64) -> (SimulatedPurchase, EnrichedRecord) {
        var sub = SimulatedPurchase(
            customer: customer, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
            originalTransactionId: "consent-\(seed)", start: Date().addingTimeInterval(-3600), uuidSeed: seed)
        sub.appTransactionId = appTransactionId
        sub.addTransaction(reason: .purchase)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(600)
        return (sub, buy)
    }

    func consentChanges(_ db: ScratchDatabase) async throws -> String {
        try await db.dump([
            ("entitlement_changes", "customer_id, change, entitlement_key, source_id, active, reason, cause_type")
        ])["entitlement_changes"]?.split(separator: "\n").filter { $0.contains("consent_rescinded") }.joined(separator: "\n") ?? ""
    }

    @Test("a rescind whose customer is known is published at once: consent_rescinded for them, their access unchanged")
    func customerKnown() async throws {
        let customer = UUID()
        let (bought, buy) = subscription(customer, appTransactionId: "704000000000000011", seed: 41)
        var sub = bought
        let rescind = sub.rescindConsent()
        try await ScratchDatabase.with { db in
            _ = try await applyAll([buy], db.store, policy: generatorPolicy)
            let before = try await db.dump([("current_entitlements", "customer_id, entitlement_key, active_until")])
            let decisions = try await applyAll([rescind, rescind], db.store, policy: generatorPolicy)
            #expect(decisions.map(\.outcome) == [.recorded, .duplicate])
            #expect(decisions[0].changes.map(\.kind) == [.consentRescinded])
            #expect(
                try await consentChanges(db)
                    == "(\(customer.uuidString.lowercased()),consent_rescinded,consent,704000000000000011,t,consent_rescinded,RESCIND_CONSENT)")
            #expect(try await db.count("SELECT count(*) FROM outbox WHERE body::jsonb->>'change' = 'consent_rescinded'") == 1)
            #expect(try await db.dump([("current_entitlements", "customer_id, entitlement_key, active_until")]) == before, "access unchanged")
            #expect(try await db.count("SELECT count(*) FROM consent_rescinds WHERE customer_id = '\(customer.uuidString)'") == 1)
        }
    }

    @Test(
        "a rescind that arrives before any purchase names its customer waits: the batch that decides their purchase publishes it once, alone or beside it"
    )
    func rescindFirst() async throws {
        let early = UUID()
        let together = UUID()
        let (firstBought, firstBuy) = subscription(early, appTransactionId: "704000000000000012", seed: 42)
        let (secondBought, secondBuy) = subscription(together, appTransactionId: "704000000000000013", seed: 43)
        var first = firstBought
        var second = secondBought
        let firstRescind = first.rescindConsent()
        let secondRescind = second.rescindConsent()
        first.addTransaction(reason: .renewal)
        let renewal = first.notify(.didRenew)
        try await ScratchDatabase.with { db in
            // Before its purchase: recorded, waiting, nothing published.
            let waiting = try await applyAll([firstRescind], db.store, policy: generatorPolicy)
            #expect(waiting[0].changes.isEmpty)
            #expect(try await consentChanges(db) == "")
            #expect(try await db.count("SELECT count(*) FROM consent_rescinds WHERE customer_id IS NULL") == 1)
            // The purchase's batch publishes it; the other rescind comes in the same batch as its purchase.
            _ = try await applyAll([firstBuy, secondRescind, secondBuy], db.store, policy: generatorPolicy)
            // A later event of the purchase publishes nothing more.
            _ = try await applyAll([renewal], db.store, policy: generatorPolicy)
            let changes = try await consentChanges(db)
            #expect(changes.split(separator: "\n").count == 2, "\(changes)")
            #expect(changes.contains("\(early.uuidString.lowercased()),consent_rescinded,consent,704000000000000012,t"), "\(changes)")
            #expect(changes.contains("\(together.uuidString.lowercased()),consent_rescinded,consent,704000000000000013,t"), "\(changes)")
            #expect(try await db.count("SELECT count(*) FROM consent_rescinds WHERE customer_id IS NULL") == 0)
        }
    }

    @Test("a rescind and its purchase applied at the same moment, in two transactions: one change every time")
    func concurrent() async throws {
        let customers = (0..<20).map { _ in UUID() }
        var pairs: [(buy: EnrichedRecord, rescind: EnrichedRecord)] = []
        for (index, customer) in customers.enumerated() {
            let (bought, buy) = subscription(customer, appTransactionId: "70400000000000\(1_000 + index)", seed: UInt64(100 + index))
            var sub = bought
            pairs.append((buy, sub.rescindConsent()))
        }
        let played = pairs
        try await ScratchDatabase.with { db in
            for pair in played {
                async let buy = applyAll([pair.buy], db.store, policy: generatorPolicy)
                async let rescind = applyAll([pair.rescind], db.store, policy: generatorPolicy)
                _ = try await (buy, rescind)
            }
            let changes = try await consentChanges(db)
            for customer in customers {
                #expect(changes.components(separatedBy: customer.uuidString.lowercased()).count - 1 == 1, "\(customer): \(changes)")
            }
            #expect(try await db.count("SELECT count(*) FROM consent_rescinds WHERE customer_id IS NULL") == 0)
        }
    }

    @Test("a rescind of an app transaction no purchase carries is recorded and published to nobody")
    func nobody() async throws {
        var stranger = subscription(nil, appTransactionId: "704000000000000014", seed: 44).0
        let rescind = stranger.rescindConsent()
        try await ScratchDatabase.with { db in
            let decisions = try await applyAll([rescind], db.store, policy: generatorPolicy)
            #expect(decisions.map(\.outcome) == [.recorded] && decisions[0].changes.isEmpty)
            #expect(try await consentChanges(db) == "")
            #expect(try await db.count("SELECT count(*) FROM outbox") == 0)
        }
    }
}
