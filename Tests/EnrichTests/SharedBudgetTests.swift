import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EnrichService
import Foundation
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

/// Apple counts each app's requests per endpoint whoever sends them, so four enrich replicas
/// spending a whole budget each would be rate-limited (429s delay every customer behind them).
@Suite("One App Store API budget shared by enrich's replicas", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct SharedBudgetTests {
    @Test("4 replicas in one group against a simulator enforcing the app's rate: parts add up to one budget, zero 429s, every record enriched")
    func fourReplicasZero429() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let verified = try await TestServices.makeTopic("budget-verified", partitions: 8)
        let enriched = try await TestServices.makeTopic("budget-enriched", partitions: 8)
        let deadLetters = try await TestServices.makeTopic("budget-dlq")
        let group = TestServices.uniqueGroup("budget")
        let t0 = SimFixture.now().addingTimeInterval(-30 * 86_400)
        var records: [VerifiedRecord] = []
        for k in 0..<80 {
            let id = "2000000000700\(String(format: "%03d", k))"
            let t = SimFixture.transaction(original: id, id: id, purchased: t0)
            try sim.apple.store.upsert([t])
            records.append(EnrichFixture.notification(t))
        }
        // Apple enforces 8 requests per second per endpoint for the app, with two seconds of burst
        // (Apple counts over an hour). The group's budget is 90 % of it: Sandbox history and
        // status are documented at 5/s, so a scale of 1.44 gives 7.2/s. Each replica alone would
        // spend all 7.2/s (28.8/s for four) were the budget not split.
        sim.apple.faults.set(FaultPlan(requestsPerSecond: 8, burstSeconds: 2))
        let policy = RateLimitPolicy(scale: 1.44, burst: .seconds(1))
        var clients: [AppStoreServerAPIClient] = []
        var harnesses: [StageHarness] = []
        for _ in 0..<4 {
            let client = try SimFixture.client(sim, rateLimits: policy)
            // As enrich's bootstrap does: nothing is spent until the runner tells the part owned.
            client.rateLimiter.setPart(0)
            clients.append(client)
            let stage = EnrichStage(lookup: PurchaseLookup(client: client), outputTopic: enriched, logger: TestServices.logger)
            harnesses.append(
                try StageHarness(
                    stage: stage, input: verified, deadLetters: deadLetters, groupID: group, batchSize: 10,
                    retry: RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .seconds(2))))
        }
        // The records come once the group has settled, so what is measured is the steady state.
        var settled = false
        for _ in 0..<1200 where !settled {
            let parts = clients.map(\.rateLimiter.part)
            settled = parts.allSatisfy { $0 > 0 } && abs(parts.reduce(0, +) - 1) < 1e-9
            if !settled { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(settled, "the four replicas' parts: \(clients.map(\.rateLimiter.part))")
        try await EnrichFixture.produce(records, to: verified)
        let out = try await TopicReader.read(enriched, timeout: .seconds(600)) { $0.count >= records.count }
        for harness in harnesses { try await harness.stop() }
        let letters = try await TopicReader.readAll(deadLetters)
        let statistics = sim.apple.faults.statistics
        sim.apple.faults.set(.none)
        #expect(out.count == records.count, "every record enriched")
        #expect(letters.isEmpty, "nothing dead-lettered")
        #expect((statistics.byStatus["429"] ?? 0) == 0, "Apple rate-limited the group: \(statistics.byStatus)")
        #expect((statistics.byStatus["200"] ?? 0) >= records.count, "each record looked up: \(statistics.byStatus)")
    }
}
