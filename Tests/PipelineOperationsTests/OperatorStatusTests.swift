import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

@Suite("appstorectl's shared parsing: times and pipeline names")
struct OperatorParsingTests {
    @Test("relative ages (36h, 7d, 90m, 30s) and ISO 8601 times parse; anything else does not")
    func times() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(OperatorTime.parse("36h", now: now) == now.addingTimeInterval(-36 * 3600))
        #expect(OperatorTime.parse("7d", now: now) == now.addingTimeInterval(-7 * 86_400))
        #expect(OperatorTime.parse("90m", now: now) == now.addingTimeInterval(-90 * 60))
        #expect(OperatorTime.parse("30s", now: now) == now.addingTimeInterval(-30))
        #expect(OperatorTime.parse("1.5h", now: now) == now.addingTimeInterval(-5400))
        #expect(OperatorTime.parse("2026-11-21T10:00:00Z") == Date(timeIntervalSince1970: 1_795_255_200))
        #expect(OperatorTime.parse("2026-11-21T10:00:00.250Z") == Date(timeIntervalSince1970: 1_795_255_200.25))
        for bad in ["36", "h", "36x", "-5h", "yesterday", "", "2026-13-01T00:00:00Z", "infh"] {
            #expect(OperatorTime.parse(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test("topic and group names follow the environment's overrides, per stage")
    func names() throws {
        let environment = [
            "RAW_TOPIC": "raw.x", "VERIFIED_TOPIC": "verified.x", "ENRICHED_TOPIC": "enriched.x", "GRANT_DLQ_TOPIC": "grant-dlq.x",
            "ENRICH_GROUP_ID": "enrich.x", "VERIFY_GROUP_ID": "",
        ]
        let stages = PipelineNames.stages(environment: environment)
        #expect(stages.map(\.name) == ["verify", "enrich", "grant"])
        #expect(stages.map(\.inputTopic) == ["raw.x", "verified.x", "enriched.x"])
        #expect(stages.map(\.outputTopic) == ["verified.x", "enriched.x", nil])
        #expect(stages.map(\.groupID) == [PipelineStages.verify.groupID, "enrich.x", PipelineStages.grant.groupID])
        #expect(stages.map(\.deadLetterTopic) == [Topics.verifyDeadLetters, Topics.enrichDeadLetters, "grant-dlq.x"])
        #expect(PipelineNames.stages(environment: [:]) == PipelineStages.all)
        #expect(PipelineNames.stage("ingest", environment: environment) == nil)
    }
}

@Suite("Pipeline status and dead-letter replays on the broker", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct OperatorStatusTests {
    let client = TestServices.clientConfiguration("tests-status")

    /// Writes `counts[p]` records to partition p, one batch per record (exact watermarks on any broker).
    func produce(_ counts: [Int32: Int], to topic: String, producer: KafkaProducer) async throws {
        for (partition, count) in counts {
            for i in 0..<count {
                _ = try await producer.send(
                    KafkaOutgoingMessage(topic: topic, key: Array("k\(i)".utf8), value: Array("v\(i)".utf8), partition: partition))
            }
        }
    }

    @Test("lag per partition from the committed offset, members, last record time and dead letters by code")
    func status() async throws {
        let (stage, producer) = try await makeStageWithDeadLetters("status", letters: 3, attempts: 2)
        let before = Date().addingTimeInterval(-2)
        try await produce([0: 5, 1: 3], to: stage.inputTopic, producer: producer)
        let reader = PipelineStatusReader(client: client)

        let waiting = await reader.read(stage)
        #expect(waiting.errors.isEmpty, "\(waiting.errors)")
        #expect(waiting.members == [])
        #expect(waiting.partitions.map(\.lag) == [5, 3])
        #expect(waiting.partitions.map(\.committed) == [nil, nil])
        #expect(waiting.lag == 8)
        let last = try #require(waiting.lastRecordAt)
        #expect(last >= before && last <= Date().addingTimeInterval(2))
        #expect(
            waiting.deadLetters == [
                DeadLetterCount(code: "record.malformed", total: 1, notReplayed: 1),
                DeadLetterCount(code: "verification.invalid_signature", total: 2, notReplayed: 2),
            ])
        #expect(waiting.deadLettersNotReplayed == 3)

        // The group read part of partition 0 and all of partition 1.
        let offsets = KafkaGroupOffsets(configuration: client)
        try await offsets.commit(
            group: stage.groupID,
            offsets: [
                KafkaTopicPartition(topic: stage.inputTopic, partition: 0): 2, KafkaTopicPartition(topic: stage.inputTopic, partition: 1): 3,
            ])
        let partly = await reader.read(stage)
        #expect(partly.partitions.map(\.lag) == [3, 0])
        #expect(partly.partitions.map(\.committed) == [2, 3])
        #expect(partly.partitions.map(\.end) == [5, 3])

        // A running member of the group is listed with its client ID.
        let consumer = try KafkaConsumer(
            configuration: TestServices.consumerConfiguration(group: stage.groupID, topics: [stage.inputTopic]), logger: TestServices.logger)
        let deadline = ContinuousClock.now + .seconds(60)
        while consumer.assignment.isEmpty, ContinuousClock.now < deadline { _ = await consumer.poll(timeout: .milliseconds(100)) }
        let joined = await reader.read(stage)
        await consumer.close()
        #expect(joined.members?.count == 1, "\(String(describing: joined.members)) \(joined.groupState ?? "-")")
        // Apache Kafka reports each member's client.id; Tansu 0.6 reports it empty (README, broker notes).
        print("status: member as the broker lists it: \(String(describing: joined.members?.first))")
        #expect(["tests-consumer", ""].contains(joined.members?.first?.clientID ?? "missing"))
        await producer.close()
    }

    @Test("a queue is read, replayed and remembered page by page: small pages give the same letters, counts and replay as one")
    func pages() async throws {
        let (stage, producer) = try await makeStageWithDeadLetters("pages", letters: 11)
        var queue = DeadLetterQueue(stage: stage, client: client)
        queue.pageSize = 3
        var sizes: [Int] = []
        var seen: [String] = []
        try await queue.forEachPage { page in
            sizes.append(page.count)
            seen += page.map { "\($0.message.partition)/\($0.message.offset)" }
        }
        #expect(sizes.allSatisfy { $0 <= 3 } && sizes.count >= 4, "\(sizes)")
        #expect(seen.count == 11 && Set(seen).count == 11, "every letter once: \(seen)")
        #expect(try await queue.list().count == 11)
        let status = await PipelineStatusReader(client: client).read(stage)
        #expect(status.deadLetters?.reduce(0) { $0 + $1.total } == 11)

        var printed = 0
        let outcome = try await queue.replay(producer: producer, keepLetters: false) { printed += $0.count }
        #expect(outcome.replayedCount == 11 && printed == 11 && outcome.replayed.isEmpty)
        #expect(try await queue.list().allSatisfy(\.replayed), "every page remembered")
        #expect(try await queue.replay(producer: producer).replayedCount == 0)
        let reinjected = try await TopicReader.readAll(stage.inputTopic)
        #expect(reinjected.count == 11)
        await producer.close()
    }

    @Test("dlq replay --dry-run sends and remembers nothing; a replay by code is remembered like an unfiltered one")
    func dryRunAndCode() async throws {
        let (stage, producer) = try await makeStageWithDeadLetters("status", letters: 6, attempts: 2)
        let queue = DeadLetterQueue(stage: stage, client: client)

        let plan = try await queue.plan()
        #expect(plan.replayed.count == 6)
        let codePlan = try await queue.plan(filter: DeadLetterFilter(codes: ["record.malformed"]))
        #expect(codePlan.replayed.count == 3 && codePlan.skipped == 3)
        // Nothing was sent to the input, nothing remembered.
        let input = try await KafkaTopicScanner(configuration: client, idle: .seconds(2)).scan([
            KafkaTopicPartition(topic: stage.inputTopic, partition: 0): nil, KafkaTopicPartition(topic: stage.inputTopic, partition: 1): nil,
        ])
        #expect(input.isEmpty)
        #expect(try await queue.list().allSatisfy { !$0.replayed })

        let first = try await queue.replay(filter: DeadLetterFilter(codes: ["record.malformed"]), producer: producer)
        #expect(first.replayed.count == 3)
        #expect(first.replayed.allSatisfy { $0.code == "record.malformed" })
        let again = try await queue.replay(filter: DeadLetterFilter(codes: ["record.malformed"]), producer: producer)
        #expect(again.replayed.isEmpty, "a second identical replay sends nothing")
        let listed = try await queue.list()
        #expect(listed.filter(\.replayed).map(\.code) == ["record.malformed", "record.malformed", "record.malformed"])

        // The unfiltered replay takes what the code replay left; --include-replayed takes a code again.
        let rest = try await queue.replay(producer: producer)
        #expect(rest.replayed.map(\.code) == ["verification.invalid_signature", "verification.invalid_signature", "verification.invalid_signature"])
        #expect(try await queue.replay(producer: producer).replayed.isEmpty)
        let forced = try await queue.replay(
            filter: DeadLetterFilter(codes: ["verification.invalid_signature"]), includeReplayed: true, producer: producer)
        #expect(forced.replayed.count == 3)
        let reinjected = try await TopicReader.readAll(stage.inputTopic)
        #expect(reinjected.count == 9)
        await producer.close()
    }
}
