import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EnrichService
import Foundation
import GrantDecision
import GrantTestSupport
import KafkaClient
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

/// Issue 28's clock skew: grant orders what it learns about a purchase by Apple's signatures, so an
/// enrich instance whose clock runs ahead cannot make a later fact look older.
@Suite("Clock skew between enrich instances", .enabled(if: TestServices.brokerEnabled), .serialized, .timeLimit(.minutes(15)))
struct ClockSkewTests {
    /// How far the fast instance's clock runs ahead: beyond the suite's time limit (15 minutes).
    static let skew: TimeInterval = 20 * 60

    @Test("an instance minutes fast enriches the purchase, the partition moves to one on time, a REFUND then revokes access (in either order)")
    func refundAfterSkewedInstance() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let verified = try await TestServices.makeTopic("skew-verified", partitions: 1)
        let enriched = try await TestServices.makeTopic("skew-enriched", partitions: 1)
        let deadLetters = try await TestServices.makeTopic("skew-dlq")
        let group = TestServices.uniqueGroup("skew")
        let id = "2000000000950001"
        let bought = SimFixture.transaction(original: id, id: id, purchased: SimFixture.now().addingTimeInterval(-3_600), token: UUID())
        try sim.apple.store.upsert([bought])

        // The instance whose clock runs ahead enriches the purchase. The figure is 120 s; the
        // skew here is larger than the test's time limit, so the refund's lookup reads "before" the
        // purchase's however slowly the partition moves (beside the whole suite the move has taken
        // more than 120 s, which left the hosts' clocks in the true order and the case untested).
        let ahead: @Sendable () -> Date = { Date().addingTimeInterval(ClockSkewTests.skew) }
        let fast = EnrichStage(
            lookup: PurchaseLookup(client: try SimFixture.client(sim), clock: ahead), outputTopic: enriched, logger: TestServices.logger,
            clock: ahead)
        try await EnrichFixture.produce([EnrichFixture.notification(bought, type: .subscribed, subtype: .initialBuy)], to: verified)
        var harness = try StageHarness(stage: fast, input: verified, deadLetters: deadLetters, groupID: group)
        _ = try await TopicReader.read(enriched) { $0.count >= 1 }
        try await harness.stop()

        // Apple refunds it; the partition now belongs to an instance with the right time.
        #expect(
            sim.apple.store.modifyTransaction(id) {
                $0.revocationDate = SimFixture.now()
                $0.revocationReason = .refundedForOtherReason
            })
        var refunded = bought
        refunded.revocationDate = SimFixture.now()
        try await EnrichFixture.produce([EnrichFixture.notification(refunded, type: .refund)], to: verified)
        harness = try StageHarness(
            stage: try EnrichFixture.stage(sim, outputTopic: enriched), input: verified, deadLetters: deadLetters, groupID: group)
        let out = try await TopicReader.read(enriched) { $0.count >= 2 }
        try await harness.stop()

        let records = try out.map { try EnrichedRecord.decode($0.value) }
        #expect(records.count == 2)
        #expect(
            records[1].enrichment.fetchedAt < records[0].enrichment.fetchedAt, "the refund was looked up 'before' the purchase by the hosts' clocks")
        for order in [records, records.reversed()] {
            var ledger = InMemoryLedger(policy: GrantPolicy(catalog: ProductCatalog(), expiryLeeway: 3600, transferPolicy: .refuse))
            for record in order { try ledger.apply(record) }
            #expect(ledger.purchases.values.first?.lifecycle == .revoked, "order \(order.map(\.verified.notification?.notificationType))")
            #expect(!ledger.rows(source: id).isEmpty && ledger.rows(source: id).allSatisfy { !$0.active }, "no access after the refund")
        }
    }
}
