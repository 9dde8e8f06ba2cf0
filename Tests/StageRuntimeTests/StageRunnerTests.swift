import ErrorClassification
import Foundation
import KafkaClient
import Metrics
import PipelineRecords
import Prometheus
import StageRuntime
import Synchronization
import TestSupport
import Testing

/// Copies input to output; fails as the body asks: "poison…" permanently, "flaky…" transiently
/// on its first three attempts, "stuck…" transiently on every attempt, "sick…" transiently while
/// ``sick`` is set; every record transiently while ``down`` is set (an outage).
final class ScriptedStage: PipelineStage {
    let name = "scripted"
    let output: String
    let attempts = Mutex<[String: Int]>([:])
    let down = Mutex(false)
    let sick = Mutex(true)
    let maxDelayMs: Int

    init(output: String, maxDelayMs: Int = 0) {
        self.output = output
        self.maxDelayMs = maxDelayMs
    }

    func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
        let body = message.text
        let attempt = attempts.withLock { a in
            a[body, default: 0] += 1
            return a[body]!
        }
        if maxDelayMs > 0 { try await Task.sleep(for: .milliseconds(Int.random(in: 0...maxDelayMs))) }
        if body.hasPrefix("poison") { throw StageError.permanent(.init(rawValue: "test.poisoned"), "the record \(body) can never be processed") }
        if down.withLock({ $0 }) || body.hasPrefix("stuck") || (body.hasPrefix("sick") && sick.withLock { $0 }) {
            throw StageError.transient(.init(rawValue: "test.dependency_down"), "try again", retryAfter: .milliseconds(10))
        }
        if body.hasPrefix("flaky"), attempt <= 3 {
            throw StageError.transient(.init(rawValue: "test.dependency_down"), "try again", retryAfter: .milliseconds(10))
        }
        return [KafkaOutgoingMessage(topic: output, key: message.key, value: message.value, headers: message.headers)]
    }
}

@Suite("Stage runtime on the real broker", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct StageRunnerTests {
    @Test("per-partition order is kept while partitions run concurrently")
    func ordering() async throws {
        let input = try await TestServices.makeTopic("order-in", partitions: 4)
        let output = try await TestServices.makeTopic("order-out", partitions: 4)
        let dlq = try await TestServices.makeTopic("order-dlq")
        try await produceNumbered(input, count: 400, keys: 8)
        let group = TestServices.uniqueGroup("order")
        let progress = GroupProgress(group: group, topic: input)
        let harness = try StageHarness(
            stage: ScriptedStage(output: output, maxDelayMs: 3), input: input, deadLetters: dlq, groupID: group)
        // Alone it takes seconds; the deadline allows for the whole suite on two cores, and the
        // group's lag is sampled so that a short count says whether a partition stalled.
        let out = try await TopicReader.read(output, timeout: .seconds(600)) { $0.count >= 400 }
        progress.stop()
        try await harness.stop()
        #expect(out.count == 400, "stalled: \(progress.stalled(for: .seconds(60))); \(progress.report)")
        for (key, records) in Dictionary(grouping: out, by: { $0.keyString ?? "" }) {
            let ns = records.map { Int($0.text)! }
            #expect(ns == ns.sorted(), "key \(key) out of order")
        }
    }

    /// With a buffer of two records per partition, every partition is paused and resumed hundreds of
    /// times, from the consumer's thread and the worker's task at once: a pause that reached the
    /// consumer after the resume that should undo it left a partition stopped for good, its lag
    /// never falling (seen in a 100,000-event replay). Alone it takes about 15 s; beside the whole
    /// suite a partition has drained at under two records a second (1,600 records in more than
    /// 560 s), so the wait ends when every record is out or a partition's lag stops falling for two
    /// minutes, with a deadline only against a hang (780 s: the suite allows each test 900 s, and a
    /// loaded run has taken 685 s). Completion is judged from the output, never from the group's
    /// lag: Tansu's high watermark is the start of the last batch + 1, so a lag of zero can hide a
    /// last batch still waiting (an earlier form of this test stopped there).
    @Test("backpressure: a partition paused and resumed hundreds of times still delivers every record")
    func pauseResumeUnderBackpressure() async throws {
        let input = try await TestServices.makeTopic("backpressure-in", partitions: 4)
        let output = try await TestServices.makeTopic("backpressure-out", partitions: 4)
        let dlq = try await TestServices.makeTopic("backpressure-dlq")
        let count = 1_600
        try await produceNumbered(input, count: count, keys: 16)
        let group = TestServices.uniqueGroup("backpressure")
        let progress = GroupProgress(group: group, topic: input)
        let harness = try StageHarness(
            stage: ScriptedStage(output: output), input: input, deadLetters: dlq, groupID: group, maxBuffered: 2)
        let out = try await TopicReader.read(output, timeout: .seconds(780)) {
            Set($0.map(\.text)).count >= count || !progress.stalled(for: .seconds(120)).isEmpty
        }
        progress.stop()
        try await harness.stop()
        let missing = count - Set(out.map(\.text)).count
        let stalled = progress.stalled(for: .seconds(120))
        #expect(missing == 0, "\(missing) records never left a paused partition; stalled: \(stalled); \(progress.report)")
        print("backpressure: \(progress.report)")
    }

    @Test("a transient failure is retried in place: nothing skipped, nothing reordered, nothing dead-lettered")
    func transientRetry() async throws {
        let input = try await TestServices.makeTopic("retry-in")
        let output = try await TestServices.makeTopic("retry-out")
        let dlq = try await TestServices.makeTopic("retry-dlq")
        try await produceNumbered(input, count: 10, keys: 1) { $0 == 4 ? "flaky-4" : "\($0)" }
        let stage = ScriptedStage(output: output)
        let harness = try StageHarness(stage: stage, input: input, deadLetters: dlq, groupID: TestServices.uniqueGroup("retry"))
        let out = try await TopicReader.read(output) { $0.count >= 10 }
        try await harness.stop()
        #expect(out.map(\.text) == ["0", "1", "2", "3", "flaky-4", "5", "6", "7", "8", "9"])
        #expect(stage.attempts.withLock { $0["flaky-4"] } == 4)
        let letters = try await TopicReader.readAll(dlq)
        #expect(letters.isEmpty)
    }

    @Test("a record that fails alone while others succeed is dead-lettered after the retry cap, with its attempts; its partition moves on")
    func retryCap() async throws {
        let input = try await TestServices.makeTopic("cap-in", partitions: 2)
        let output = try await TestServices.makeTopic("cap-out", partitions: 2)
        let dlq = try await TestServices.makeTopic("cap-dlq")
        let seed = try TestServices.makeProducer()
        _ = try await seed.sendAll(
            (0..<6).map {
                KafkaOutgoingMessage(topic: input, key: Array("k0".utf8), value: Array(($0 == 2 ? "stuck-2" : "\($0)").utf8), partition: 0)
            })
        await seed.close()
        let stage = ScriptedStage(output: output)
        let harness = try StageHarness(
            stage: stage, input: input, deadLetters: dlq, groupID: TestServices.uniqueGroup("cap"),
            retry: RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100), capAttempts: 5, capTime: .milliseconds(500)))
        let traffic = Self.steadyTraffic(input, partition: 1)
        let letters = try await TopicReader.read(dlq) { !$0.isEmpty }
        let out = try await TopicReader.read(output) { records in records.filter { $0.keyString == "k0" }.count >= 5 }
        traffic.cancel()
        try await harness.stop()
        let letter = try #require(letters.first)
        #expect(letters.count == 1)
        #expect(letter.text == "stuck-2")
        #expect(letter.headers.string(DeadLetterHeader.errorCode) == "test.dependency_down")
        #expect(letter.headers.string(DeadLetterHeader.errorMessage)?.hasPrefix("retry cap reached after") == true)
        #expect(Int(letter.headers.string(DeadLetterHeader.attempts) ?? "") ?? 0 >= 5)
        #expect(out.filter { $0.keyString == "k0" }.map(\.text) == ["0", "1", "3", "4", "5"], "the partition moved on, in order")
    }

    @Test("a record failing on its own is parked: its partition moves on, its key's later record waits behind it, no committed offset passes it")
    func parkedRecord() async throws {
        let input = try await TestServices.makeTopic("park-in", partitions: 2)
        let output = try await TestServices.makeTopic("park-out", partitions: 2)
        let dlq = try await TestServices.makeTopic("park-dlq")
        let group = TestServices.uniqueGroup("park")
        // Partition 0: one purchase (key S) that keeps failing, its later record, other keys around them.
        let records = [("A", "a-0"), ("S", "sick-1"), ("B", "b-2"), ("S", "s-3"), ("B", "b-4"), ("A", "a-5")]
        let seed = try TestServices.makeProducer()
        _ = try await seed.sendAll(
            records.map { KafkaOutgoingMessage(topic: input, key: Array($0.0.utf8), value: Array($0.1.utf8), partition: 0) })
        await seed.close()
        let retry = RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), capAttempts: 0)
        let traffic = Self.steadyTraffic(input, partition: 1)
        defer { traffic.cancel() }
        let first = ScriptedStage(output: output)
        let harness = try StageHarness(stage: first, input: input, deadLetters: dlq, groupID: group, retry: retry)
        let moved = try await TopicReader.read(output) { out in Set(out.map(\.text)).isSuperset(of: ["a-0", "b-2", "b-4", "a-5"]) }
        #expect(!moved.contains { $0.text == "sick-1" || $0.text == "s-3" }, "the failing purchase's records wait, in order")
        #expect(first.attempts.withLock { $0["s-3"] } == nil, "its later record is not even tried before it")
        // A restart while it still fails: the committed offset stopped at it, so the next owner reads
        // it and the record held behind it again (and repeats what followed: duplicates are dropped
        // downstream); what came before it is not read again.
        try await harness.stop()
        let second = ScriptedStage(output: output)
        let restarted = try StageHarness(stage: second, input: input, deadLetters: dlq, groupID: group, retry: retry)
        let patience = ContinuousClock.now + TopicReader.patience
        while second.attempts.withLock({ $0["sick-1"] ?? 0 }) < 2 {
            guard ContinuousClock.now < patience else { throw TestSupportError("the restarted stage never read sick-1 again") }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(second.attempts.withLock { $0["a-0"] } == nil, "a-0 was committed past before sick-1 failed")
        second.sick.withLock { $0 = false }
        let out = try await TopicReader.read(output) { out in out.contains { $0.text == "s-3" } }
        try await restarted.stop()
        #expect(out.filter { $0.keyString == "S" }.map(\.text) == ["sick-1", "s-3"], "the purchase's order kept")
        #expect(try await TopicReader.readAll(dlq).isEmpty)
    }

    @Test("parking is bounded: with room for one record, a second purchase failing waits with the rest of its partition until the first ends")
    func parkingBounded() async throws {
        let input = try await TestServices.makeTopic("parkfull-in", partitions: 2)
        let output = try await TestServices.makeTopic("parkfull-out", partitions: 2)
        let dlq = try await TestServices.makeTopic("parkfull-dlq")
        let records = [("SA", "sick-a"), ("SB", "sick-b"), ("C", "c-2")]
        let seed = try TestServices.makeProducer()
        _ = try await seed.sendAll(
            records.map { KafkaOutgoingMessage(topic: input, key: Array($0.0.utf8), value: Array($0.1.utf8), partition: 0) })
        await seed.close()
        let traffic = Self.steadyTraffic(input, partition: 1)
        defer { traffic.cancel() }
        let stage = ScriptedStage(output: output)
        let harness = try StageHarness(
            stage: stage, input: input, deadLetters: dlq, groupID: TestServices.uniqueGroup("parkfull"),
            retry: RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100), capAttempts: 0), maxParked: 1)
        // The first purchase parked fills the room: tried again and again, while nothing after it moves.
        let patience = ContinuousClock.now + TopicReader.patience
        while stage.attempts.withLock({ $0["sick-a"] ?? 0 }) < 8 {
            guard ContinuousClock.now < patience else { throw TestSupportError("sick-a was not retried") }
            try await Task.sleep(for: .milliseconds(50))
        }
        // Waited for, not sampled: beside the whole suite the other partition's first record can come
        // after sick-a's eighth try.
        let flowing = try await TopicReader.read(output) { out in out.contains { $0.text.hasPrefix("other-") } }
        #expect(flowing.contains { $0.text.hasPrefix("other-") }, "the other partition went on")
        let meanwhile = try await TopicReader.readAll(output)
        #expect(!meanwhile.contains { $0.text == "c-2" || $0.text == "sick-b" }, "no room to park: partition 0 waits")
        stage.sick.withLock { $0 = false }
        let out = try await TopicReader.read(output) { out in out.contains { $0.text == "c-2" } }
        try await harness.stop()
        let partition0 = out.map(\.text).filter { records.map(\.1).contains($0) }
        #expect(partition0.sorted() == ["c-2", "sick-a", "sick-b"], "all of it, once each, once the purchase healed")
    }

    /// The rest of the stage keeps working: a record on `partition` every 50 ms.
    static func steadyTraffic(_ input: String, partition: Int32) -> Task<Void, any Error> {
        Task {
            let producer = try TestServices.makeProducer()
            for i in 0..<2_400 where !Task.isCancelled {
                _ = try await producer.send(
                    KafkaOutgoingMessage(topic: input, key: Array("other".utf8), value: Array("other-\(i)".utf8), partition: partition))
                try await Task.sleep(for: .milliseconds(50))
            }
            await producer.close()
        }
    }

    @Test("during an outage (every record failing) nothing is dead-lettered, however long past the cap; all go through after it")
    func outageIsNotCapped() async throws {
        let input = try await TestServices.makeTopic("outage-in", partitions: 2)
        let output = try await TestServices.makeTopic("outage-out", partitions: 2)
        let dlq = try await TestServices.makeTopic("outage-dlq")
        let stage = ScriptedStage(output: output)
        stage.down.withLock { $0 = true }
        try await produceNumbered(input, count: 20, keys: 4)
        let harness = try StageHarness(
            stage: stage, input: input, deadLetters: dlq, groupID: TestServices.uniqueGroup("outage"),
            retry: RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100), capAttempts: 3, capTime: .milliseconds(200)))
        // Well past the cap on every partition: each record tried many times.
        let deadline = ContinuousClock.now + .seconds(120)
        while stage.attempts.withLock({ a in a.values.max() ?? 0 }) < 8, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(1))
        stage.down.withLock { $0 = false }
        let out = try await TopicReader.read(output) { $0.count >= 20 }
        try await harness.stop()
        #expect(Set(out.map(\.text)) == Set((0..<20).map { "\($0)" }))
        let letters = try await TopicReader.readAll(dlq)
        #expect(letters.isEmpty, "an outage dead-lettered \(letters.map(\.text))")
    }

    @Test("a poison record lands in the DLQ with its reason; the records after it are processed")
    func poisonMessage() async throws {
        let input = try await TestServices.makeTopic("poison-in")
        let output = try await TestServices.makeTopic("poison-out")
        let dlq = try await TestServices.makeTopic("poison-dlq")
        let before = Date()
        try await produceNumbered(input, count: 6, keys: 1) { $0 == 2 ? "poison-2" : "\($0)" }
        let harness = try StageHarness(
            stage: ScriptedStage(output: output), input: input, deadLetters: dlq, groupID: TestServices.uniqueGroup("poison"))
        let out = try await TopicReader.read(output) { $0.count >= 5 }
        let letters = try await TopicReader.read(dlq) { !$0.isEmpty }
        try await harness.stop()
        #expect(out.map(\.text) == ["0", "1", "3", "4", "5"])
        let letter = try #require(letters.first)
        #expect(letters.count == 1)
        #expect(letter.text == "poison-2", "the dead letter keeps the original body")
        #expect(letter.keyString == "k0")
        #expect(letter.headers.string("n") == "2", "original headers are kept")
        #expect(letter.headers.string(DeadLetterHeader.errorCode) == "test.poisoned")
        #expect(letter.headers.string(DeadLetterHeader.errorMessage)?.contains("poison-2") == true)
        #expect(letter.headers.string(DeadLetterHeader.stage) == "scripted")
        #expect(letter.headers.string(DeadLetterHeader.sourceTopic) == input)
        #expect(letter.headers.string(DeadLetterHeader.sourcePartition) == "0")
        #expect(letter.headers.string(DeadLetterHeader.sourceOffset) == "2")
        #expect(letter.headers.string(DeadLetterHeader.attempts) == "1")
        let first = try #require(letter.headers.string(DeadLetterHeader.firstFailureAt).flatMap { try? Date($0, strategy: .iso8601) })
        let last = try #require(letter.headers.string(DeadLetterHeader.lastFailureAt).flatMap { try? Date($0, strategy: .iso8601) })
        #expect(first >= before.addingTimeInterval(-1) && last >= first)
    }

    @Test("a batch stage sees consecutive records of one partition; a poison record inside a batch is isolated")
    func batches() async throws {
        final class BatchStage: PipelineStage {
            let name = "batch"
            let output: String
            let sizes = Mutex<[Int]>([])
            init(output: String) { self.output = output }
            func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
                if message.text.hasPrefix("poison") { throw StageError.permanent(.init(rawValue: "test.poisoned"), "bad") }
                return [KafkaOutgoingMessage(topic: output, key: message.key, value: message.value)]
            }
            func process(batch: [KafkaMessage]) async throws -> [Result<[KafkaOutgoingMessage], any Error>] {
                sizes.withLock { $0.append(batch.count) }
                // All or nothing, like one database transaction.
                if batch.contains(where: { $0.text.hasPrefix("poison") }) {
                    throw StageError.permanent(.init(rawValue: "test.poisoned"), "bad batch")
                }
                return batch.map { .success([KafkaOutgoingMessage(topic: output, key: $0.key, value: $0.value)]) }
            }
        }
        let input = try await TestServices.makeTopic("batch-in")
        let output = try await TestServices.makeTopic("batch-out")
        let dlq = try await TestServices.makeTopic("batch-dlq")
        try await produceNumbered(input, count: 50, keys: 1) { $0 == 20 ? "poison-20" : "\($0)" }
        let stage = BatchStage(output: output)
        let harness = try StageHarness(stage: stage, input: input, deadLetters: dlq, groupID: TestServices.uniqueGroup("batch"), batchSize: 16)
        let out = try await TopicReader.read(output) { $0.count >= 49 }
        let letters = try await TopicReader.read(dlq) { !$0.isEmpty }
        try await harness.stop()
        #expect(out.map(\.text) == (0..<50).filter { $0 != 20 }.map(String.init))
        #expect(letters.map(\.text) == ["poison-20"])
        #expect(stage.sizes.withLock { $0.max() ?? 0 } > 1, "records were handed over in batches")
    }

    @Test("graceful shutdown commits what was finished: a restarted stage neither loses nor repeats records")
    func gracefulShutdownCommits() async throws {
        let input = try await TestServices.makeTopic("drain-in", partitions: 2)
        let output = try await TestServices.makeTopic("drain-out", partitions: 2)
        let dlq = try await TestServices.makeTopic("drain-dlq")
        let group = TestServices.uniqueGroup("drain")
        try await produceNumbered(input, count: 100, keys: 4)
        // A drain that gives up cancels the record in flight, whose output may be written while its
        // offset is not (a repeat, by design): the grace allows for a broker slowed by the whole suite.
        let first = try StageHarness(
            stage: ScriptedStage(output: output), input: input, deadLetters: dlq, groupID: group, drainTimeout: TopicReader.patience)
        // This read may end early on a loaded machine: the stop then lands mid-stream, which is covered too.
        _ = try await TopicReader.read(output, timeout: .seconds(120)) { $0.count >= 100 }
        try await first.stop()
        try await produceNumbered(input, count: 100, keys: 4) { "\($0 + 100)" }
        let second = try StageHarness(stage: ScriptedStage(output: output), input: input, deadLetters: dlq, groupID: group)
        let out = try await TopicReader.read(output) { $0.count >= 200 }
        // A fresh reader takes everything there is for a while (a loaded machine joins groups slowly);
        // a record processed twice would show up as a 201st.
        let settled = try await TopicReader.read(output, timeout: .seconds(90)) { $0.count > 200 }
        try await second.stop()
        #expect(Set(out.map(\.text)) == Set((0..<200).map(String.init)))
        #expect(settled.count == 200, "no record was processed twice")
    }

    @Test("metrics count consumed, produced, retried and dead-lettered records")
    func metrics() async throws {
        let registry = PrometheusCollectorRegistry()
        let input = try await TestServices.makeTopic("metrics-in")
        let output = try await TestServices.makeTopic("metrics-out")
        let dlq = try await TestServices.makeTopic("metrics-dlq")
        try await produceNumbered(input, count: 5, keys: 1) { $0 == 1 ? "poison-1" : $0 == 2 ? "flaky-2" : "\($0)" }
        try await withMetricsFactory(PrometheusMetricsFactory(registry: registry)) {
            let harness = try StageHarness(
                stage: ScriptedStage(output: output), input: input, deadLetters: dlq, groupID: TestServices.uniqueGroup("metrics"))
            _ = try await TopicReader.read(output) { $0.count >= 4 }
            try await harness.stop()
        }
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#"pipeline_messages_consumed_total{stage="scripted"} 5"#))
        #expect(text.contains(#"pipeline_messages_produced_total{stage="scripted"} 4"#))
        #expect(text.contains(#"pipeline_retries_total{stage="scripted"} 3"#))
        #expect(text.contains(#"pipeline_messages_dead_lettered_total{stage="scripted",code="test.poisoned"} 1"#))
        #expect(text.contains("pipeline_processing_duration_seconds_bucket"))
    }
}
