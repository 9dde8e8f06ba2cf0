import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EnrichService
import Foundation
import KafkaClient
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

/// verified → enrich → enriched / DLQ on the real broker, against the simulated Apple.
@Suite("enrich stage on the real broker", .enabled(if: TestServices.brokerEnabled), .serialized, .timeLimit(.minutes(15)))
struct EnrichPipelineTests {
    struct Topics3 {
        let verified: String, enriched: String, deadLetters: String
        static func make(_ prefix: String) async throws -> Topics3 {
            Topics3(
                verified: try await TestServices.makeTopic("\(prefix)-verified", partitions: 4),
                enriched: try await TestServices.makeTopic("\(prefix)-enriched", partitions: 4),
                deadLetters: try await TestServices.makeTopic("\(prefix)-dlq"))
        }
    }

    let t0 = SimFixture.now().addingTimeInterval(-60 * 86_400)

    @Test(
        "an out-of-order burst (renewals before the initial buy) gets the full sorted history and the newest in force; a missing token comes from history"
    )
    func outOfOrderBurst() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let topics = try await Topics3.make("enrich-burst")
        let token = UUID()
        let original = "2000000000600000"
        let initial = SimFixture.transaction(original: original, id: "2000000000600000", purchased: t0, token: token)
        let renewal1 = SimFixture.transaction(original: original, id: "2000000000600001", purchased: t0.addingTimeInterval(30 * 86_400))
        let renewal2 = SimFixture.transaction(original: original, id: "2000000000600002", purchased: t0.addingTimeInterval(60 * 86_400))
        // Apple stored them newest first (its order is by modification, not purchase).
        try sim.apple.store.upsert([renewal2, renewal1, initial])
        let records = [
            EnrichFixture.notification(renewal2, type: .didRenew),
            EnrichFixture.notification(renewal1, type: .didRenew),
            EnrichFixture.notification(initial, type: .subscribed, subtype: .initialBuy),
        ]
        try await EnrichFixture.produce(records, to: topics.verified)
        let harness = try StageHarness(
            stage: try EnrichFixture.stage(sim, outputTopic: topics.enriched), input: topics.verified, deadLetters: topics.deadLetters,
            groupID: TestServices.uniqueGroup("enrich"), batchSize: 50)
        let enriched = try await TopicReader.read(topics.enriched) { $0.count >= 3 }
        try await harness.stop()
        let letters = try await TopicReader.readAll(topics.deadLetters)
        #expect(letters.isEmpty)
        #expect(enriched.count == 3)
        let bodies = try enriched.map { try EnrichedRecord.decode($0.value) }
        #expect(bodies.map(\.verified.notificationUUID) == records.map(\.notificationUUID), "the input order is kept")
        for (message, body) in zip(enriched, bodies) {
            #expect(message.keyString == "Sandbox:\(original)")
            #expect(message.headers.string(PipelineHeader.schema) == Topics.enriched)
            #expect(body.enrichment.history.map(\.transactionId) == [initial.transactionId, renewal1.transactionId, renewal2.transactionId])
            #expect(body.enrichment.inForceTransactionId == renewal2.transactionId)
            #expect(body.enrichment.subscriptionStatus?.status == .active)
            #expect(body.enrichment.subscriptionStatus?.renewalInfo?.originalTransactionId == original)
        }
        // The renewals carry no token: it comes from the initial buy in history.
        #expect(bodies[0].enrichment.appAccountToken == token)
        #expect(bodies[0].enrichment.appAccountTokenSource == .history)
        #expect(bodies[2].enrichment.appAccountTokenSource == .transaction)
        let errors = try await SchemaValidator.errors(of: enriched.map(\.value), schema: "enriched.v1.schema.json")
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test("the simulator answering 500 for 30 s delays but loses nothing and keeps per-key order; nothing is dead-lettered")
    func outage() async throws {
        let seconds = Int64(ProcessInfo.processInfo.environment["ENRICH_OUTAGE_SECONDS"] ?? "30") ?? 30
        try await outage(FaultPlan(errorShare: 1, errorStatus: 500, errorCode: 5_000_001), for: .seconds(seconds), topic: "enrich-outage")
    }

    /// As long as the issue's adversarial test: past the retry cap (RETRY_CAP_MS, 120 s), which an
    /// outage must never trip.
    @Test("Apple refusing our key (401) for 120 s is an outage: records wait, none is dead-lettered, all go through once it heals")
    func refusedKey() async throws {
        let seconds = Int64(ProcessInfo.processInfo.environment["ENRICH_401_SECONDS"] ?? "120") ?? 120
        try await outage(FaultPlan(errorShare: 1, errorStatus: 401), for: .seconds(seconds), topic: "enrich-401")
    }

    /// Every API call answers as `plan` says for `outage`; the records wait in place and all come
    /// through afterwards, in per-key order, with nothing dead-lettered.
    func outage(_ plan: FaultPlan, for outage: Duration, topic: String) async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let topics = try await Topics3.make(topic)
        var records: [VerifiedRecord] = []
        for k in 0..<8 {
            let original = "20000000007000\(k)0"
            let transactions = (0..<3).map {
                SimFixture.transaction(original: original, id: "20000000007000\(k)\($0)", purchased: t0.addingTimeInterval(Double($0) * 86_400))
            }
            try sim.apple.store.upsert(transactions)
            records += transactions.map { EnrichFixture.notification($0) }
        }
        records.shuffle()
        // The outage runs from the first request it refuses: beside the whole suite the stage's start
        // has taken longer than a 30 s outage timed from here, which then refused nothing.
        var faults = plan
        faults.until = nil
        sim.apple.faults.set(faults)
        try await EnrichFixture.produce(records, to: topics.verified)
        let harness = try StageHarness(
            stage: try EnrichFixture.stage(sim, outputTopic: topics.enriched), input: topics.verified, deadLetters: topics.deadLetters,
            groupID: TestServices.uniqueGroup("enrich"), batchSize: 10,
            retry: RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(2)))
        let waitingSince = ContinuousClock.now
        while sim.apple.faults.statistics.injectedFaults == 0, ContinuousClock.now - waitingSince < TopicReader.patience {
            try await Task.sleep(for: .milliseconds(20))
        }
        let outageEnds = Date().addingTimeInterval(Double(outage.components.seconds))
        faults.until = outageEnds
        sim.apple.faults.set(faults)
        let enriched = try await TopicReader.read(topics.enriched, timeout: outage + .seconds(120)) { $0.count >= records.count }
        try await harness.stop()
        let letters = try await TopicReader.readAll(topics.deadLetters)
        #expect(letters.isEmpty, "\(letters.compactMap { $0.headers.string(DeadLetterHeader.errorCode) })")
        #expect(enriched.count == records.count)
        #expect(sim.apple.faults.statistics.injectedFaults > 0, "the outage happened")
        #expect(Date() >= outageEnds, "nothing came through before the simulator recovered")
        let bodies = try enriched.map { try EnrichedRecord.decode($0.value) }
        #expect(Set(bodies.compactMap(\.verified.notificationUUID)) == Set(records.compactMap(\.notificationUUID)))
        // Per key, the output order is the input order.
        for key in Set(records.compactMap(\.key)) {
            let expected = records.filter { $0.key == key }.map(\.notificationUUID)
            let got = bodies.filter { $0.key == key }.map(\.verified.notificationUUID)
            #expect(got == expected, "order of \(key)")
        }
    }

    @Test(
        "Apple answering 500 for one purchase for good: the rest of its partition goes on; the purchase is dead-lettered after the retry cap, its notifications in order"
    )
    func onePurchaseBrokenForGood() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let topics = try await Topics3.make("enrich-broken")
        var purchases: [[JWSTransactionDecodedPayload]] = []
        for k in 0..<16 {
            let prefix = "20000000010\(String(format: "%02d", k))00"
            let transactions = (0..<2).map {
                SimFixture.transaction(original: "\(prefix)0", id: "\(prefix)\($0)", purchased: t0.addingTimeInterval(Double($0) * 86_400))
            }
            try sim.apple.store.upsert(transactions)
            purchases.append(transactions)
        }
        sim.apple.faults.break(purchase: try #require(purchases[0][0].originalTransactionId))
        let brokenRecords = purchases[0].map { EnrichFixture.notification($0) }
        let others = purchases.dropFirst().flatMap { $0.map { EnrichFixture.notification($0) } }
        try await EnrichFixture.produce(brokenRecords + others, to: topics.verified)
        // Other customers' notifications keep coming, so the stage makes progress while the purchase fails.
        let healthy = purchases.dropFirst().map { $0[1] }
        let traffic = Task {
            let producer = try TestServices.makeProducer()
            var sent = 0
            while !Task.isCancelled {
                _ = try await producer.send(
                    try EnrichFixture.outgoing(EnrichFixture.notification(healthy[sent % healthy.count]), topic: topics.verified))
                sent += 1
                do { try await Task.sleep(for: .milliseconds(100)) } catch { break }
            }
            await producer.close()
            return sent
        }
        defer { traffic.cancel() }
        let harness = try StageHarness(
            stage: try EnrichFixture.stage(sim, outputTopic: topics.enriched), input: topics.verified, deadLetters: topics.deadLetters,
            groupID: TestServices.uniqueGroup("enrich"), batchSize: 10,
            retry: RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(2), capAttempts: 5, capTime: .seconds(20)))
        let letters = try await TopicReader.read(topics.deadLetters) { $0.count >= 2 }
        traffic.cancel()
        let total = brokenRecords.count + others.count + (try await traffic.value)
        let inputs = try await TopicReader.read(topics.verified) { $0.count >= total }
        func enriched(_ records: [KafkaMessage]) -> Set<String> {
            Set(records.compactMap { try? EnrichedRecord.decode($0.value).verified.notificationUUID })
        }
        let outputs = try await TopicReader.read(topics.enriched) { enriched($0).count >= total - brokenRecords.count }
        try await harness.stop()
        // Dead-lettered after the cap, in order, as Apple's error.
        #expect(letters.count == 2)
        #expect(try letters.map { try VerifiedRecord.decode($0.value).notificationUUID } == brokenRecords.map(\.notificationUUID))
        for letter in letters {
            #expect(letter.headers.string(DeadLetterHeader.errorCode) == "apple_api.5000000")
            #expect(letter.headers.string(DeadLetterHeader.errorMessage)?.hasPrefix("retry cap reached after") == true)
            #expect(Int(letter.headers.string(DeadLetterHeader.attempts) ?? "") ?? 0 >= 5)
        }
        // Every other notification was enriched; those sharing the broken purchase's partition did not
        // wait for it: the first notifications, produced beside it, came out before its first dead letter.
        let partition = try #require(letters.first?.headers.string(DeadLetterHeader.sourcePartition).flatMap(Int32.init))
        let firstLetter = try #require(letters.first?.timestamp)
        var produced: [String: KafkaMessage] = [:]
        for input in inputs { if let uuid = try VerifiedRecord.decode(input.value).notificationUUID { produced[uuid] = input } }
        let initial = Set(others.compactMap(\.notificationUUID))
        let brokenOffset = try #require(produced[brokenRecords[0].notificationUUID ?? ""]?.offset)
        let running = try #require(outputs.compactMap(\.timestamp).min())
        var latencies: [Double] = []
        var initialOnPartition = 0
        for output in outputs {
            let record = try EnrichedRecord.decode(output.value)
            #expect(record.key != brokenRecords[0].key, "the broken purchase was never enriched")
            guard let uuid = record.verified.notificationUUID, let input = produced[uuid], input.partition == partition,
                let sent = input.timestamp, let done = output.timestamp
            else { continue }
            // Latency of what came while the purchase kept failing, once the stage ran (what came
            // before waited for it to join its group).
            if !initial.contains(uuid), sent > running { latencies.append(done.timeIntervalSince(sent)) }
            if initial.contains(uuid), input.offset > brokenOffset {
                initialOnPartition += 1
                #expect(done < firstLetter, "\(record.key ?? ""), behind the broken purchase on its partition, waited for its dead letter")
            }
        }
        #expect(initialOnPartition > 0, "other purchases' first notifications share the broken one's partition")
        #expect(enriched(outputs).count == inputs.count - brokenRecords.count)
        latencies.sort()
        let p = { (q: Double) in latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))] }
        print(
            "one purchase broken for good: \(latencies.count) notifications produced on its partition while it failed, "
                + "\(initialOnPartition) of the first ones behind it before its first dead letter; latency p50 \(p(0.5)) s, p99 \(p(0.99)) s, max \(latencies.last ?? 0) s"
        )
    }

    @Test("Apple's rate limiting (429 with Retry-After) is waited out, never dead-lettered; an unknown purchase is dead-lettered with Apple's code")
    func rateLimitingAndPermanentErrors() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let topics = try await Topics3.make("enrich-429")
        var records: [VerifiedRecord] = []
        for k in 0..<24 {
            let t = SimFixture.transaction(
                original: "2000000000800\(String(format: "%03d", k))", id: "2000000000800\(String(format: "%03d", k))", purchased: t0)
            try sim.apple.store.upsert([t])
            records.append(EnrichFixture.notification(t))
        }
        let unknown = EnrichFixture.withoutTransaction(
            SimFixture.transaction(original: "2000000000899999", id: "2000000000899999", purchased: t0))
        records.insert(unknown, at: 5)
        // Apple-like enforcement at 8 requests per second per endpoint, while the client believes it
        // may send 16 (Apple's real limit is lower than the documented one, or shared): 429s happen,
        // and each is waited out.
        sim.apple.faults.set(FaultPlan(requestsPerSecond: 8))
        try await EnrichFixture.produce(records, to: topics.verified)
        let harness = try StageHarness(
            stage: try EnrichFixture.stage(sim, outputTopic: topics.enriched, rateLimits: RateLimitPolicy(scale: 3.2, burst: .seconds(1))),
            input: topics.verified, deadLetters: topics.deadLetters, groupID: TestServices.uniqueGroup("enrich"), batchSize: 10,
            retry: RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .seconds(2)))
        let enriched = try await TopicReader.read(topics.enriched) { $0.count >= records.count - 1 }
        let letters = try await TopicReader.read(topics.deadLetters) { $0.count >= 1 }
        try await harness.stop()
        sim.apple.faults.set(.none)
        #expect(enriched.count == records.count - 1)
        #expect((sim.apple.faults.statistics.byStatus["429"] ?? 0) > 0, "the simulator did rate-limit")
        #expect(letters.count == 1)
        #expect(letters.first?.headers.string(DeadLetterHeader.errorCode) == "apple_api.4040010")
        #expect(letters.first?.headers.string(DeadLetterHeader.stage) == "enrich")
        #expect(letters.first?.value == (try unknown.encoded()), "the dead letter keeps the verified body")
    }

    @Test(
        "Apple's history not showing a just-signed purchase (404 4040010): set aside while the partition's other purchases go on, then enriched from history; past the wait, from the record's own transaction; never dead-lettered"
    )
    func historyNotVisibleYet() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        // One partition each way, so the order enrich wrote in is the order read.
        let topics = Topics3(
            verified: try await TestServices.makeTopic("enrich-notvisible-verified", partitions: 1),
            enriched: try await TestServices.makeTopic("enrich-notvisible-enriched", partitions: 1),
            deadLetters: try await TestServices.makeTopic("enrich-notvisible-dlq"))
        let token = UUID()
        let twice = SimFixture.transaction(original: "2000000000900001", id: "2000000000900001", purchased: t0, token: token)
        let never = SimFixture.transaction(original: "2000000000900002", id: "2000000000900002", purchased: t0, token: token)
        let visible = (3...4).map { SimFixture.transaction(original: "200000000090000\($0)", id: "200000000090000\($0)", purchased: t0) }
        try sim.apple.store.upsert([twice, never] + visible)
        // The history hides this one purchase for its first two lookups (as a lifecycle does).
        sim.apple.faults.hideHistory(of: twice.transactionId!, lookups: 2)
        try await EnrichFixture.produce(([twice] + visible).map { EnrichFixture.notification($0) }, to: topics.verified)
        var harness = try StageHarness(
            stage: try EnrichFixture.stage(sim, outputTopic: topics.enriched), input: topics.verified, deadLetters: topics.deadLetters,
            groupID: TestServices.uniqueGroup("enrich"), batchSize: 10,
            retry: RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(1)))
        let first = try await TopicReader.read(topics.enriched) { $0.count >= 3 }
        try await harness.stop()
        #expect(sim.apple.faults.statistics.historyNotVisible == 2, "the history answered 404 twice")
        let written = try first.map { try EnrichedRecord.decode($0.value) }
        #expect(
            written.map(\.verified.transactionId) == visible.map(\.transactionId) + [twice.transactionId],
            "the purchases behind it on its partition were not held while Apple's history caught up")
        let fromHistory = try #require(written.last)
        #expect(fromHistory.enrichment.lookup == .history)
        #expect(fromHistory.enrichment.appAccountToken == token)

        // Hidden for longer than the wait (zero here), by the plan for every purchase: the record's
        // own signed transaction stands in.
        sim.apple.faults.set(FaultPlan(historyNotVisibleLookups: 1_000))
        let later = try await Topics3.make("enrich-notvisible-wait")
        try await EnrichFixture.produce([EnrichFixture.notification(never)], to: later.verified)
        harness = try StageHarness(
            stage: try EnrichFixture.stage(sim, outputTopic: later.enriched, historyWait: .zero), input: later.verified,
            deadLetters: later.deadLetters, groupID: TestServices.uniqueGroup("enrich"), batchSize: 10)
        let both = try await TopicReader.read(later.enriched) { $0.count >= 1 }
        try await harness.stop()
        let fallback = try EnrichedRecord.decode(try #require(both.last).value)
        #expect(fallback.verified.transactionId == never.transactionId)
        #expect(fallback.enrichment.lookup == .transactionOnly)
        #expect(fallback.enrichment.inForceTransactionId == never.transactionId)
        #expect(fallback.enrichment.appAccountToken == token)
        var letters = try await TopicReader.readAll(topics.deadLetters)
        letters += try await TopicReader.readAll(later.deadLetters)
        #expect(letters.isEmpty, "\(letters.compactMap { $0.headers.string(DeadLetterHeader.errorCode) })")
        let errors = try await SchemaValidator.errors(of: (first + both).map(\.value), schema: "enriched.v1.schema.json")
        #expect(errors.isEmpty, "\(errors)")
    }
}
