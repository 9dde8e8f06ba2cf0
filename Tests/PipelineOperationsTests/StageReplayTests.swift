import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

@Suite("Replaying a stage by resetting its group", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct StageReplayTests {
    let client = TestServices.clientConfiguration("tests-replay")

    /// A stage of its own: a fresh input topic and group, so tests never touch the real stages.
    func makeStage(partitions: Int = 2) async throws -> PipelineStageInfo {
        let input = try await TestServices.makeTopic("replay-in", partitions: partitions)
        return PipelineStageInfo(
            name: "test", groupID: TestServices.uniqueGroup("replay"), inputTopic: input, outputTopic: nil,
            deadLetterTopic: input)
    }

    func produce(_ count: Int, to topic: String, tag: String) async throws {
        let producer = try TestServices.makeProducer()
        _ = try await producer.sendAll(
            (0..<count).map {
                KafkaOutgoingMessage(topic: topic, key: "k\($0)", value: Array("\(tag)-\($0)".utf8))
            })
        await producer.close()
    }

    /// Consumes the whole topic as the stage's group and commits, as a stage that finished would.
    func consumeAll(_ stage: PipelineStageInfo, expecting count: Int) async throws -> [KafkaMessage] {
        let consumer = try KafkaConsumer(
            configuration: TestServices.consumerConfiguration(group: stage.groupID, topics: [stage.inputTopic]),
            logger: TestServices.logger)
        var seen: [KafkaMessage] = []
        let deadline = ContinuousClock.now + .seconds(120)
        while seen.count < count, ContinuousClock.now < deadline {
            if let message = await consumer.poll(timeout: .milliseconds(100)) {
                seen.append(message)
                try consumer.storeOffset(message)
            }
        }
        try await consumer.commit()
        await consumer.close()
        return seen
    }

    @Test("replay from the earliest offset makes the stage's group read everything again")
    func earliest() async throws {
        let stage = try await makeStage()
        try await produce(20, to: stage.inputTopic, tag: "a")
        #expect(try await consumeAll(stage, expecting: 20).count == 20)

        let replay = StageReplay(offsets: KafkaGroupOffsets(configuration: client))
        let plan = try await replay.plan(stage: stage, from: .earliest)
        #expect(plan.entries.count == 2)
        #expect(plan.recordsToReprocess == 20)
        #expect(plan.entries.allSatisfy { $0.target == 0 && ($0.current ?? 0) > 0 })
        try await replay.apply(plan)

        let again = try await consumeAll(stage, expecting: 20)
        #expect(Set(again.map { String(decoding: $0.value, as: UTF8.self) }) == Set((0..<20).map { "a-\($0)" }))
    }

    @Test("replay from an offset on one partition leaves the others where they are")
    func offsetOnOnePartition() async throws {
        let stage = try await makeStage()
        try await produce(20, to: stage.inputTopic, tag: "b")
        _ = try await consumeAll(stage, expecting: 20)
        let offsets = KafkaGroupOffsets(configuration: client)
        let before = try await offsets.committed(
            group: stage.groupID, partitions: [0, 1].map { KafkaTopicPartition(topic: stage.inputTopic, partition: $0) })

        let replay = StageReplay(offsets: offsets)
        let plan = try await replay.plan(stage: stage, from: .offset(1), partitions: [1])
        #expect(plan.entries.map(\.partition.partition) == [1])
        try await replay.apply(plan)

        let after = try await offsets.committed(
            group: stage.groupID, partitions: [0, 1].map { KafkaTopicPartition(topic: stage.inputTopic, partition: $0) })
        #expect(
            after[KafkaTopicPartition(topic: stage.inputTopic, partition: 0)] == before[KafkaTopicPartition(topic: stage.inputTopic, partition: 0)])
        #expect(after[KafkaTopicPartition(topic: stage.inputTopic, partition: 1)] == .some(1))
        let partitionOneTotal = try #require(before[KafkaTopicPartition(topic: stage.inputTopic, partition: 1)] ?? nil)
        let again = try await consumeAll(stage, expecting: Int(partitionOneTotal - 1))
        #expect(again.count == Int(partitionOneTotal - 1))
        #expect(again.allSatisfy { $0.partition == 1 && $0.offset >= 1 })
    }

    @Test("replay from a time restarts at the first record written after it")
    func fromTime() async throws {
        let stage = try await makeStage(partitions: 1)
        try await produce(5, to: stage.inputTopic, tag: "old")
        try await Task.sleep(for: .milliseconds(1500))
        let cut = Date()
        try await Task.sleep(for: .milliseconds(500))
        try await produce(7, to: stage.inputTopic, tag: "new")
        _ = try await consumeAll(stage, expecting: 12)

        let replay = StageReplay(offsets: KafkaGroupOffsets(configuration: client))
        let plan = try await replay.plan(stage: stage, from: .time(cut))
        #expect(plan.entries.map(\.target) == [5])
        try await replay.apply(plan)
        let again = try await consumeAll(stage, expecting: 7)
        #expect(again.map { String(decoding: $0.value, as: UTF8.self) } == (0..<7).map { "new-\($0)" })
    }

    @Test("an offset outside the partition and an unknown partition are refused with typed errors")
    func refusals() async throws {
        let stage = try await makeStage()
        try await produce(4, to: stage.inputTopic, tag: "c")
        let replay = StageReplay(offsets: KafkaGroupOffsets(configuration: client))
        await #expect(throws: OperationsError.self) { try await replay.plan(stage: stage, from: .offset(10_000)) }
        do {
            _ = try await replay.plan(stage: stage, from: .earliest, partitions: [7])
            Issue.record("partition 7 of a 2-partition topic was accepted")
        } catch let error as OperationsError {
            #expect(error.code == .noSuchPartition)
        }
    }

    @Test("a replay is refused while a member of the stage's group is running")
    func refusedWhileRunning() async throws {
        let stage = try await makeStage(partitions: 1)
        try await produce(3, to: stage.inputTopic, tag: "d")
        let consumer = try KafkaConsumer(
            configuration: TestServices.consumerConfiguration(group: stage.groupID, topics: [stage.inputTopic]),
            logger: TestServices.logger)
        // Joined once it has read something.
        var read = 0
        let deadline = ContinuousClock.now + .seconds(120)
        while read < 3, ContinuousClock.now < deadline {
            if await consumer.poll(timeout: .milliseconds(100)) != nil { read += 1 }
        }
        #expect(read == 3)
        let replay = StageReplay(offsets: KafkaGroupOffsets(configuration: client))
        let plan = try await replay.plan(stage: stage, from: .earliest)
        await #expect(throws: (any Error).self) { try await replay.apply(plan) }
        await consumer.close()
    }
}
