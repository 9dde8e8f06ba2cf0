import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Crypto
import EnrichService
import EnvironmentSettings
import Foundation
import KafkaClient
import PipelineRecords
import StageRuntime
import Synchronization
import TestSupport
import Testing

/// Replays cost nothing (issue 14.5): enrich drops an event it has enriched and delivered, a repeat
/// within a batch shares its first occurrence's fate, and a purchase looked up moments ago shares
/// that answer with records that arrived before it was requested.
@Suite("enrich caches", .serialized, .timeLimit(.minutes(15)))
struct EnrichCacheTests {
    let t0 = SimFixture.now().addingTimeInterval(-40 * 86_400)

    func makeStage(
        _ sim: RunningSimulator, coalesce: Bool = true, caches: EnrichStage.Caches, clock: TestClock? = nil, outputTopic: String = Topics.enriched
    ) throws -> EnrichStage {
        let now: @Sendable () -> Date
        if let clock { now = { clock.now } } else { now = { Date() } }
        return EnrichStage(
            lookup: PurchaseLookup(client: try SimFixture.client(sim), clock: now), outputTopic: outputTopic, coalesce: coalesce, caches: caches,
            logger: TestServices.logger, clock: now)
    }

    /// A subscription of three transactions, stored at the simulator.
    func purchase(_ sim: RunningSimulator, _ original: String) throws -> [JWSTransactionDecodedPayload] {
        let transactions = (0..<3).map {
            SimFixture.transaction(original: original, id: "\(original.dropLast())\($0)", purchased: t0.addingTimeInterval(Double($0) * 30 * 86_400))
        }
        try sim.apple.store.upsert(transactions)
        return transactions
    }

    /// A verified record as read from the topic, with its `ingested-at`.
    static func message(_ record: VerifiedRecord, offset: Int64, ingestedAt: Date? = nil) throws -> KafkaMessage {
        var message = try EnrichFixture.message(record, offset: offset)
        if let ingestedAt { message.headers.append(KafkaHeader(key: PipelineHeader.ingestedAt, string: Timestamp.iso8601(ingestedAt))) }
        return message
    }

    static func outputs(_ results: [Result<[KafkaOutgoingMessage], any Error>]) throws -> [Int] {
        try results.map { try $0.get().count }
    }

    @Test("an event enters the replay cache only once its output was delivered: a record processed again before that is enriched again")
    func deliveredOnly() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let transactions = try purchase(sim, "4100000000000010")
        let stage = try makeStage(sim, caches: EnrichStage.Caches(lookupTimeToLive: .zero))
        let record = EnrichFixture.notification(transactions[2])
        let first = try Self.message(record, offset: 0)
        #expect(try Self.outputs(try await stage.process(batch: [first])) == [1])
        // The produce failed (or the partition moved before it was acknowledged): the runtime hands
        // the same record to the stage again, and it must be enriched again, not dropped.
        #expect(try Self.outputs(try await stage.process(batch: [first])) == [1])
        #expect(stage.replaysDropped == 0)
        #expect(stage.lookupsPerformed == 2)
        // Delivered: from now on the event is a replay, dropped before any API call.
        stage.delivered([first])
        let calls = sim.apple.faults.statistics.requests
        let replays = try (1...3).map { try Self.message(record, offset: $0) }
        #expect(try Self.outputs(try await stage.process(batch: [replays[0]])) == [0])
        #expect(try Self.outputs(try await stage.process(batch: Array(replays[1...]))) == [0, 0])
        #expect(stage.replaysDropped == 3)
        #expect(stage.lookupsPerformed == 2)
        #expect(sim.apple.faults.statistics.requests == calls, "no API call for a replay")
        // Another notification of the same purchase is a new event.
        #expect(try Self.outputs(try await stage.process(batch: [try Self.message(EnrichFixture.notification(transactions[2]), offset: 4)])) == [1])
        #expect(stage.lookupsPerformed == 3)
        // A caller that never reports deliveries (no replay cache) enriches every record.
        let uncached = try makeStage(sim, caches: .disabled)
        #expect(try Self.outputs(try await uncached.process(batch: [first])) == [1])
        uncached.delivered([first])
        #expect(try Self.outputs(try await uncached.process(batch: [replays[0]])) == [1])
    }

    @Test("a repeat within a batch shares the first one's outcome: dropped when it was enriched, dead-lettered with it when it failed")
    func repeatsWithinABatch() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let a = try purchase(sim, "4100000000000020")
        let b = try purchase(sim, "4100000000000030")
        // Without coalescing every record would pay its own lookup: the repeats still cost nothing.
        let stage = try makeStage(sim, coalesce: false, caches: EnrichStage.Caches(lookupTimeToLive: .zero))
        let n1 = EnrichFixture.notification(a[2])
        let n2 = EnrichFixture.notification(b[2])
        let batch = try [n1, n1, n2, n1, n2].enumerated().map { try Self.message($1, offset: Int64($0)) }
        let results = try await stage.process(batch: batch)
        #expect(try Self.outputs(results) == [1, 0, 1, 0, 0])
        #expect(stage.lookupsPerformed == 2)
        #expect(stage.replaysDropped == 3)

        // A purchase Apple does not know, with no signed transaction of its own to stand in: permanent.
        let unknown = EnrichFixture.withoutTransaction(
            SimFixture.transaction(original: "4199999999999990", id: "4199999999999990", purchased: t0))
        let failing = try [unknown, n1, unknown].enumerated().map { try Self.message($1, offset: Int64(10 + $0)) }
        let failed = try await stage.process(batch: failing)
        #expect(failed.count == 3)
        for index in [0, 2] {
            guard case .failure(let error) = failed[index] else {
                Issue.record("record \(index) must fail")
                continue
            }
            #expect(FailureClassification(error).code == "apple_api.4040010")
        }
        #expect((try? failed[1].get())?.count == 1)
        #expect(stage.lookupsPerformed == 4, "the unknown purchase was looked up once")
    }

    @Test("uploads are keyed like grant's: the same signed transaction again is a replay, a re-signed one is not")
    func uploads() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        var transaction = try purchase(sim, "4100000000000040")[0]
        transaction.signedDate = SimFixture.now()
        let stage = try makeStage(sim, caches: EnrichStage.Caches(lookupTimeToLive: .zero))
        let upload = EnrichFixture.upload(transaction, hint: UUID())
        #expect(upload.eventKey == "transaction:\(transaction.transactionId!):\(AppStoreJSON.milliseconds(since1970: transaction.signedDate!))")
        let first = try Self.message(upload, offset: 0)
        #expect(try Self.outputs(try await stage.process(batch: [first])) == [1])
        stage.delivered([first])
        #expect(try Self.outputs(try await stage.process(batch: [try Self.message(upload, offset: 1)])) == [0])
        var resigned = transaction
        resigned.signedDate = transaction.signedDate!.addingTimeInterval(1)
        #expect(try Self.outputs(try await stage.process(batch: [try Self.message(EnrichFixture.upload(resigned, hint: UUID()), offset: 2)])) == [1])
        #expect(stage.replaysDropped == 1)
    }

    @Test("the replay cache is bounded: the least recently delivered events are forgotten first")
    func replayBound() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let transactions = try purchase(sim, "4100000000000050")
        let stage = try makeStage(sim, caches: EnrichStage.Caches(replayEntries: 4, lookupTimeToLive: .zero))
        let records = (0..<10).map { _ in EnrichFixture.notification(transactions[2]) }
        let messages = try records.enumerated().map { try Self.message($1, offset: Int64($0)) }
        let results = try await stage.process(batch: messages)
        #expect(try Self.outputs(results) == Array(repeating: 1, count: 10))
        stage.delivered(messages)
        #expect(try Self.outputs(try await stage.process(batch: [try Self.message(records[9], offset: 10)])) == [0], "the newest is remembered")
        #expect(try Self.outputs(try await stage.process(batch: [try Self.message(records[0], offset: 11)])) == [1], "the oldest is forgotten")
    }

    @Test("an answer serves later batches for its TTL, and only records that arrived before it was requested")
    func lookupCache() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let transactions = try purchase(sim, "4100000000000060")
        let base = SimFixture.now()
        let clock = TestClock(base)
        let stage = try makeStage(sim, caches: EnrichStage.Caches(lookupTimeToLive: .seconds(2)), clock: clock)
        var offset: Int64 = 0
        func ms(_ date: Date) -> Int64 { AppStoreJSON.milliseconds(since1970: date) }
        /// Processes one new notification of the purchase that arrived `arrived` seconds from `base`.
        func event(arrived: TimeInterval) async throws -> Enrichment {
            var record = EnrichFixture.notification(transactions[2])
            record.verifiedAt = base.addingTimeInterval(arrived)
            offset += 1
            let message = try Self.message(record, offset: offset, ingestedAt: base.addingTimeInterval(arrived - 0.004))
            let output = try await stage.process(batch: [message])[0].get()
            return try EnrichedRecord.decode(output[0].value).enrichment
        }

        let a = try await event(arrived: -1)
        #expect(stage.lookupsPerformed == 1)
        #expect(ms(a.fetchedAt) == ms(base))
        clock.advance(by: 0.5)
        // Arrived before A's answer was requested: shares it.
        let b = try await event(arrived: -0.5)
        #expect(stage.lookupsPerformed == 1)
        #expect(stage.lookupCacheHits == 1)
        #expect(b.fetchedAt == a.fetchedAt && b.history == a.history)
        // Arrived after A's answer was requested: looked up again (requested now, at base + 0.5).
        let c = try await event(arrived: 0.2)
        #expect(stage.lookupsPerformed == 2)
        #expect(ms(c.fetchedAt) == ms(base) + 500)
        // Arrived in the very millisecond C's answer was requested: it may not know of it.
        clock.advance(by: 0.1)
        _ = try await event(arrived: 0.5)
        #expect(stage.lookupsPerformed == 3)
        // Arrived long before, but the newest answer (requested at base + 0.6) is older than the TTL.
        clock.advance(by: 2.5)
        let d = try await event(arrived: 0.1)
        #expect(stage.lookupsPerformed == 4)
        #expect(ms(d.fetchedAt) == ms(base) + 3100)
        #expect(stage.lookupCacheHits == 1)
        // Within the TTL, an old event shares the fresh answer.
        clock.advance(by: 1)
        let e = try await event(arrived: 0)
        #expect(stage.lookupsPerformed == 4)
        #expect(e.fetchedAt == d.fetchedAt)
        #expect(stage.lookupCacheHits == 2)
    }

    @Test("configuration: the cache variables, their defaults and bad values")
    func configuration() throws {
        let keyPath = try SimFixture.writeAPIKey()
        let base = [
            "APPSTORE_APPS": "\(SimFixture.bundleId)::Sandbox", "APPSTORE_API_CREDENTIALS": "\(SimFixture.bundleId):iss:KEY:\(keyPath)",
        ]
        let standard = try EnrichConfiguration(environment: EnvironmentReader(base)).caches
        #expect(standard.replayEntries == 100_000 && standard.lookupTimeToLive == .milliseconds(2000) && standard.lookupEntries == 10_000)
        let set = try EnrichConfiguration(
            environment: EnvironmentReader(
                base.merging([
                    "ENRICH_REPLAY_CACHE_SIZE": "0", "ENRICH_LOOKUP_CACHE_TTL_MS": "250", "ENRICH_LOOKUP_CACHE_SIZE": "7",
                ]) { $1 })
        ).caches
        #expect(set.replayEntries == 0 && set.lookupTimeToLive == .milliseconds(250) && set.lookupEntries == 7)
        for (name, value) in [
            ("ENRICH_REPLAY_CACHE_SIZE", "-1"), ("ENRICH_LOOKUP_CACHE_TTL_MS", "soon"), ("ENRICH_LOOKUP_CACHE_SIZE", "0"),
        ] {
            do {
                _ = try EnrichConfiguration(environment: EnvironmentReader(base.merging([name: value]) { $1 }))
                Issue.record("\(name)=\(value) must be refused")
            } catch {
                #expect(error.description.contains(name))
            }
        }
        let names = Set(EnrichConfiguration.variables.map(\.name))
        #expect(
            names.isSuperset(of: [
                "ENRICH_REPLAY_CACHE_SIZE", "ENRICH_LOOKUP_CACHE_TTL_MS", "ENRICH_LOOKUP_CACHE_SIZE", "ENRICH_VERIFIED_JWS_CACHE_SIZE",
            ]))
    }

    @Test("generational cache: never more than its capacity, recently used entries survive")
    func generationalCache() {
        var cache = GenerationalCache<Int, Int>(capacity: 6)
        for i in 0..<100 {
            cache.insert(i, for: i)
            _ = cache.value(for: 0)  // kept in use
            #expect(cache.count <= 6)
        }
        #expect(cache.value(for: 0) == 0)
        #expect(cache.value(for: 99) == 99)
        #expect(cache.value(for: 50) == nil)
        var one = GenerationalCache<String, Int>(capacity: 1)
        one.insert(1, for: "a")
        one.insert(2, for: "b")
        #expect(one.count == 1 && one.value(for: "b") == 2 && one.value(for: "a") == nil)
    }
}

/// Replays through the real runtime on the real broker: a record whose output could not be produced
/// is processed again and enriched, never dropped; once delivered, its replays are dropped.
@Suite("enrich replays on the real broker", .enabled(if: TestServices.brokerEnabled), .serialized, .timeLimit(.minutes(15)))
struct EnrichReplayRuntimeTests {
    /// The enrich stage with its outputs sent to a topic the test switches: first one the broker
    /// refuses (so every produce fails), then the real one.
    final class Redirected: PipelineStage {
        let inner: EnrichStage
        let target: Mutex<String>
        init(inner: EnrichStage, target: String) {
            self.inner = inner
            self.target = Mutex(target)
        }
        var name: String { inner.name }
        func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
            try await process(batch: [message])[0].get()
        }
        func process(batch: [KafkaMessage]) async throws -> [Result<[KafkaOutgoingMessage], any Error>] {
            let topic = target.withLock { $0 }
            return try await inner.process(batch: batch).map { result in
                result.map { outputs in outputs.map { KafkaOutgoingMessage(topic: topic, key: $0.key, value: $0.value, headers: $0.headers) } }
            }
        }
        func delivered(_ inputs: [KafkaMessage]) {
            deliveries.add(inputs.count, ordering: .relaxed)
            inner.delivered(inputs)
        }
        /// Inputs the runtime reported delivered.
        let deliveries = Atomic<Int>(0)
    }

    @Test("produce fails, the worker stops: the record is enriched again by the next run; its replays are then dropped")
    func failedProduceIsNotDropped() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let verified = try await TestServices.makeTopic("enrich-replay-verified")
        let enriched = try await TestServices.makeTopic("enrich-replay-enriched")
        let deadLetters = try await TestServices.makeTopic("enrich-replay-dlq")
        let t0 = SimFixture.now().addingTimeInterval(-10 * 86_400)
        let transaction = SimFixture.transaction(original: "4200000000000010", id: "4200000000000010", purchased: t0)
        try sim.apple.store.upsert([transaction])
        let record = EnrichFixture.notification(transaction)
        let inner = try EnrichFixture.stage(sim, outputTopic: enriched)
        let stage = Redirected(inner: inner, target: "not a valid topic name!")
        let group = TestServices.uniqueGroup("enrich-replay")
        try await EnrichFixture.produce([record], to: verified)

        let failing = try StageHarness(stage: stage, input: verified, deadLetters: deadLetters, groupID: group, batchSize: 50)
        let deadline = ContinuousClock.now + .seconds(60)
        while inner.lookupsPerformed == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(inner.lookupsPerformed == 1, "the record was enriched")
        try await Task.sleep(for: .seconds(1))
        try await failing.stop()
        #expect(stage.deliveries.load(ordering: .relaxed) == 0, "nothing could be produced, so nothing was reported delivered")

        stage.target.withLock { $0 = enriched }
        let working = try StageHarness(stage: stage, input: verified, deadLetters: deadLetters, groupID: group, batchSize: 50)
        let first = try await TopicReader.read(enriched) { !$0.isEmpty }
        #expect(first.count == 1, "the record whose output was never delivered is enriched again")
        #expect(inner.replaysDropped == 0)

        try await EnrichFixture.produce([record, record, record], to: verified)
        let waitForDrops = ContinuousClock.now + .seconds(60)
        while inner.replaysDropped < 3, ContinuousClock.now < waitForDrops { try await Task.sleep(for: .milliseconds(100)) }
        try await working.stop()
        #expect(inner.replaysDropped == 3, "delivered once, its replays are dropped")
        #expect(stage.deliveries.load(ordering: .relaxed) == 4)
        let all = try await TopicReader.readAll(enriched)
        #expect(all.count == 1)
    }
}
