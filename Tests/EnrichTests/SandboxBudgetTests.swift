import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EnrichService
import EnvironmentSettings
import Foundation
import KafkaClient
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

/// Apple's Sandbox limits are a tenth of Production's, and Sandbox and Production records share
/// enrich's partitions: a Sandbox burst must not hold up the Production records batched behind it.
@Suite("A Sandbox burst over its API budget", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct SandboxBudgetTests {
    @Test(
        "Sandbox notifications at 10× their budget are set aside and enriched at the budget's pace (zero 429s); Production records behind them on their partitions do not wait for them"
    )
    func sandboxBurstDoesNotHoldProduction() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let verified = try await TestServices.makeTopic("sandbox-burst-verified", partitions: 4)
        let enriched = try await TestServices.makeTopic("sandbox-burst-enriched", partitions: 4)
        let deadLetters = try await TestServices.makeTopic("sandbox-burst-dlq")
        let t0 = SimFixture.now().addingTimeInterval(-10 * 86_400)
        // 60 Sandbox subscriptions: each lookup is one history and one status request.
        var sandbox: [VerifiedRecord] = []
        for k in 0..<60 {
            let id = "2000000000800\(String(format: "%03d", k))"
            let transaction = SimFixture.transaction(original: id, id: id, purchased: t0)
            try sim.apple.store.upsert([transaction])
            sandbox.append(EnrichFixture.notification(transaction))
        }
        // Production purchases the simulator cannot answer for (Apple's root signs Production's
        // answers): consumables, which enrich takes from their own signed transaction, so they
        // spend no Sandbox budget and are the records a Sandbox burst must not hold up.
        let production = { (k: Int) -> VerifiedRecord in
            let id = "3000000000800\(String(format: "%03d", k % 40))"
            var transaction = SimFixture.transaction(original: id, id: id, purchased: t0, type: .consumable)
            transaction.environment = .production
            var record = EnrichFixture.notification(transaction, type: .oneTimeCharge)
            record.environment = .production
            return record
        }
        // Apple enforces 2.5 requests per second per endpoint with 2 s of burst; the client's
        // budget is 2/s (Sandbox history and status are documented at 5/s; scale 0.4).
        sim.apple.faults.set(FaultPlan(requestsPerSecond: 2.5, burstSeconds: 2))
        let policy = RateLimitPolicy(scale: 0.4, burst: .seconds(1), sandboxMaximumWait: EnrichConfiguration.sandboxBudgetWaitSetting.defaultValue)
        let client = try SimFixture.client(sim, rateLimits: policy)
        let stage = EnrichStage(lookup: PurchaseLookup(client: client), outputTopic: enriched, logger: TestServices.logger)
        let harness = try StageHarness(
            stage: stage, input: verified, deadLetters: deadLetters, groupID: TestServices.uniqueGroup("sandbox-burst"), batchSize: 10,
            retry: RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(30)))
        // Once the stage runs, Production at 10/s throughout; after 5 s, the Sandbox burst: 20
        // each second for 3 s (10× its budget); then Production for 7 s more.
        try await EnrichFixture.produce([production(0)], to: verified)
        _ = try await TopicReader.read(enriched) { !$0.isEmpty }
        let producer = try TestServices.makeProducer()
        var producedProduction = 1
        var sandboxProduced = 0
        for tick in 0..<150 {
            var batch = [production(producedProduction)]
            producedProduction += 1
            if [50, 60, 70].contains(tick) {
                // 20 at once: batches of Sandbox records only, each deferred.
                batch += sandbox[sandboxProduced..<sandboxProduced + 20]
                sandboxProduced += 20
            }
            _ = try await producer.sendAll(try batch.map { try EnrichFixture.outgoing($0, topic: verified) })
            try await Task.sleep(for: .milliseconds(100))
        }
        await producer.close()
        let total = producedProduction + sandbox.count
        let inputs = try await TopicReader.read(verified) { $0.count >= total }
        let outputs = try await TopicReader.read(enriched) { $0.count >= total }
        try await harness.stop()
        let letters = try await TopicReader.readAll(deadLetters)
        let statistics = sim.apple.faults.statistics
        sim.apple.faults.set(.none)
        #expect(letters.isEmpty, "nothing dead-lettered: \(letters.compactMap { $0.headers.string(DeadLetterHeader.errorCode) })")
        #expect((statistics.byStatus["429"] ?? 0) == 0, "Apple rate-limited the stage: \(statistics.byStatus)")
        // A purchase deferred once keeps its turn: a batch's records looked up again in each of the
        // runtime's passes do not each take a new, later one (which would leave the budget unused).
        let deferrals = client.rateLimiter.deferredRequests
        #expect(deferrals <= 2 * sandbox.count, "\(deferrals) deferrals for \(sandbox.count) Sandbox purchases")

        var produced: [String: KafkaMessage] = [:]
        for input in inputs { if let uuid = try VerifiedRecord.decode(input.value).notificationUUID { produced[uuid] = input } }
        var out: [String: (record: EnrichedRecord, message: KafkaMessage)] = [:]
        for output in outputs {
            let record = try EnrichedRecord.decode(output.value)
            if let uuid = record.verified.notificationUUID { out[uuid] = (record, output) }
        }
        #expect(out.count == total, "every record enriched once")
        // Every Sandbox record was looked up (its history, not its own transaction).
        for record in sandbox {
            #expect(out[record.notificationUUID ?? ""]?.record.enrichment.lookup == .history, "\(record.key ?? "")")
        }
        // Production records produced after the last Sandbox record came out before the last
        // Sandbox record of their partition: they did not wait behind the burst.
        let sandboxSent = sandbox.compactMap { produced[$0.notificationUUID ?? ""]?.timestamp }
        let lastSandboxSent = try #require(sandboxSent.max())
        var lastSandboxOut: [Int32: Date] = [:]
        for record in sandbox {
            guard let input = produced[record.notificationUUID ?? ""], let done = out[record.notificationUUID ?? ""]?.message.timestamp else {
                continue
            }
            lastSandboxOut[input.partition] = max(lastSandboxOut[input.partition] ?? done, done)
        }
        var behind = 0
        var baseline: [Double] = []
        var duringBurst: [Double] = []
        let firstSandboxSent = try #require(sandboxSent.min())
        for (uuid, input) in produced where !sandbox.contains(where: { $0.notificationUUID == uuid }) {
            guard let sent = input.timestamp, let done = out[uuid]?.message.timestamp else { continue }
            // The baseline leaves out the first 2 s, while the group settles.
            if sent < firstSandboxSent {
                if sent > firstSandboxSent.addingTimeInterval(-3) { baseline.append(done.timeIntervalSince(sent)) }
            } else {
                duringBurst.append(done.timeIntervalSince(sent))
            }
            guard sent > lastSandboxSent, let last = lastSandboxOut[input.partition] else { continue }
            behind += 1
            #expect(done < last, "a Production record behind the burst on partition \(input.partition) waited for it")
        }
        #expect(behind > 0, "Production records followed the burst on its partitions")
        let sandboxDrained = (lastSandboxOut.values.max() ?? lastSandboxSent).timeIntervalSince(firstSandboxSent)
        let p = { (values: [Double], q: Double) -> Double in
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
        }
        print(
            "Sandbox burst of \(sandbox.count) at 20/s against a budget of 2/s: enriched over \(sandboxDrained) s with \(deferrals) deferrals, API answers \(statistics.byStatus); "
                + "Production latency before the burst p50 \(p(baseline, 0.5)) s p99 \(p(baseline, 0.99)) s (\(baseline.count)), "
                + "during and after it p50 \(p(duringBurst, 0.5)) s p99 \(p(duringBurst, 0.99)) s (\(duringBurst.count)); \(behind) behind the burst"
        )
    }
}
