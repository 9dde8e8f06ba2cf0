import Foundation
import KafkaClient
import Synchronization
import TestSupport
import Testing

@Suite("Kafka client against the real broker", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct KafkaClientTests {
    let logger = TestServices.logger

    @Test("a sent record is acknowledged and consumed with its key and headers")
    func roundTrip() async throws {
        let topic = try await TestServices.makeTopic("roundtrip", partitions: 3)
        let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        var reports: [KafkaDeliveryReport] = []
        for i in 0..<20 {
            reports.append(
                try await producer.send(
                    KafkaOutgoingMessage(
                        topic: topic, key: "key-\(i % 4)", value: Array("value-\(i)".utf8),
                        headers: [KafkaHeader(key: "n", string: "\(i)"), KafkaHeader(key: "null", value: nil)])))
        }
        await producer.close()
        #expect(reports.allSatisfy { $0.topic == topic && $0.offset >= 0 })
        // Same key, same partition.
        let byKey = Dictionary(grouping: reports.enumerated(), by: { $0.offset % 4 }).mapValues { Set($0.map(\.element.partition)) }
        #expect(byKey.values.allSatisfy { $0.count == 1 })

        let read = try await TopicReader.read(topic) { $0.count >= 20 }
        #expect(read.count == 20)
        let values = Set(read.map { String(decoding: $0.value, as: UTF8.self) })
        #expect(values == Set((0..<20).map { "value-\($0)" }))
        let first = try #require(read.first { $0.headers.string("n") == "0" })
        #expect(first.keyString == "key-0")
        #expect(first.headers.contains(KafkaHeader(key: "null", value: nil)))
        // Per-partition order is the produce order.
        for (_, records) in Dictionary(grouping: read, by: \.partition) {
            let ns = records.map { Int($0.headers.string("n")!)! }
            #expect(ns == ns.sorted())
        }
    }

    @Test("only stored offsets are committed: a new member resumes after the last finished record")
    func manualCommit() async throws {
        let topic = try await TestServices.makeTopic("commit")
        let group = TestServices.uniqueGroup("commit")
        let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        for i in 0..<10 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: Array("\(i)".utf8))) }
        await producer.close()

        let first = try KafkaConsumer(configuration: TestServices.consumerConfiguration(group: group, topics: [topic]), logger: logger)
        var consumed = 0
        for await message in first.messages {
            consumed += 1
            // Records 0...4 are finished; 5...9 are received but not finished.
            if message.offset < 5 { try first.storeOffset(message) }
            if consumed == 10 { break }
        }
        await first.close()

        let second = try KafkaConsumer(configuration: TestServices.consumerConfiguration(group: group, topics: [topic]), logger: logger)
        var again: [Int64] = []
        for await message in second.messages {
            again.append(message.offset)
            try second.storeOffset(message)
            if again.count == 5 { break }
        }
        try await second.commit()
        await second.close()
        #expect(again == [5, 6, 7, 8, 9])
    }

    @Test("a second member takes half the partitions; the first is told and commits what it finished")
    func rebalance() async throws {
        let topic = try await TestServices.makeTopic("rebalance", partitions: 4)
        let group = TestServices.uniqueGroup("rebalance")
        let listenerA = RecordingListener()
        let a = try KafkaConsumer(
            configuration: TestServices.consumerConfiguration(group: group, topics: [topic]), logger: logger, rebalanceListener: listenerA)
        let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        for p in 0..<4 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [UInt8(p)], partition: Int32(p))) }

        // A owns all four partitions and finishes one record from each.
        var seenByA = 0
        for await m in a.messages {
            try a.storeOffset(m)
            seenByA += 1
            if seenByA == 4 { break }
        }
        #expect(a.assignment.count == 4)

        let listenerB = RecordingListener()
        let b = try KafkaConsumer(
            configuration: TestServices.consumerConfiguration(group: group, topics: [topic]), logger: logger, rebalanceListener: listenerB)
        // Both must keep polling for the rebalance to complete.
        let deadline = ContinuousClock.now + .seconds(40)
        while ContinuousClock.now < deadline && (b.assignment.isEmpty || a.assignment.count == 4) {
            async let x = a.poll(timeout: .milliseconds(50))
            async let y = b.poll(timeout: .milliseconds(50))
            let (mx, my) = await (x, y)
            #expect(mx == nil && my == nil, "records already finished must not be delivered again")
        }
        #expect(a.assignment.count + b.assignment.count == 4)
        #expect(!b.assignment.isEmpty)
        #expect(a.assignment.isDisjoint(with: b.assignment))
        #expect(!listenerA.revoked.isEmpty)
        #expect(Set(listenerA.revoked).isSubset(of: b.assignment))

        // New records reach whichever member owns their partition.
        for p in 0..<4 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [UInt8(10 + p)], partition: Int32(p))) }
        await producer.close()
        var partitionsSeen: [Int32: String] = [:]
        let deadline2 = ContinuousClock.now + .seconds(120)
        while partitionsSeen.count < 4 && ContinuousClock.now < deadline2 {
            async let x = a.poll(timeout: .milliseconds(50))
            async let y = b.poll(timeout: .milliseconds(50))
            let (mx, my) = await (x, y)
            if let mx {
                partitionsSeen[mx.partition] = "a"
                #expect(mx.value[0] >= 10)
            }
            if let my {
                partitionsSeen[my.partition] = "b"
                #expect(my.value[0] >= 10)
            }
        }
        #expect(partitionsSeen.count == 4)
        for (p, who) in partitionsSeen {
            let owner = who == "a" ? a.assignment : b.assignment
            #expect(owner.contains(KafkaTopicPartition(topic: topic, partition: p)))
        }
        await b.close()
        await a.close()
    }

    @Test("a paused partition delivers nothing until resumed, then continues where it stopped")
    func pauseResume() async throws {
        let topic = try await TestServices.makeTopic("pause", partitions: 2)
        let group = TestServices.uniqueGroup("pause")
        let consumer = try KafkaConsumer(configuration: TestServices.consumerConfiguration(group: group, topics: [topic]), logger: logger)
        let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [0], partition: 0))
        // Wait for the assignment and the first record.
        #expect(await Self.firstBytes(of: 1, from: consumer) == [0])
        let p0 = KafkaTopicPartition(topic: topic, partition: 0)
        try consumer.pause([p0])
        for i in 1...5 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [UInt8(i)], partition: 0)) }
        #expect(
            try await Self.valuesThroughMarkers(on: 1, of: topic, producer: producer, from: consumer) == [[99], [100]],
            "only the unpaused partition delivers")
        try consumer.resume([p0])
        #expect(await Self.firstBytes(of: 5, from: consumer) == [1, 2, 3, 4, 5])
        await producer.close()
        await consumer.close()
    }

    @Test("a backlog is taken from librdkafka in batches, not one trip per record, and handed out in order")
    func backlogInBatches() async throws {
        let topic = try await TestServices.makeTopic("backlog")
        let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        for i in 0..<300 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: Array("\(i)".utf8))) }
        await producer.close()
        let consumer = try KafkaConsumer(
            configuration: TestServices.consumerConfiguration(group: TestServices.uniqueGroup("backlog"), topics: [topic]), logger: logger)
        var offsets: [Int64] = []
        var roundsAtFirst = 0
        for await message in consumer.messages {
            if offsets.isEmpty { roundsAtFirst = consumer.pollRounds }
            offsets.append(message.offset)
            if offsets.count == 300 { break }
        }
        let rounds = consumer.pollRounds - roundsAtFirst
        await consumer.close()
        #expect(offsets == Array(0..<300))
        // One trip per record would be 299; each trip takes whatever librdkafka has already fetched.
        #expect(rounds < 30, "\(rounds) trips to librdkafka for 299 records")
    }

    @Test("records taken from librdkafka before a pause are held back until the resume, then come first, in order")
    func pauseHoldsTakenRecords() async throws {
        let topic = try await TestServices.makeTopic("pause-held", partitions: 2)
        let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        for i in 0..<20 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [UInt8(i)], partition: 0)) }
        let consumer = try KafkaConsumer(
            configuration: TestServices.consumerConfiguration(group: TestServices.uniqueGroup("pause-held"), topics: [topic]), logger: logger)
        #expect(await Self.firstBytes(of: 1, from: consumer) == [0])
        let p0 = KafkaTopicPartition(topic: topic, partition: 0)
        try consumer.pause([p0])
        #expect(
            try await Self.valuesThroughMarkers(on: 1, of: topic, producer: producer, from: consumer) == [[99], [100]],
            "only the unpaused partition delivers")
        for i in 20..<25 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [UInt8(i)], partition: 0)) }
        try consumer.resume([p0])
        #expect(await Self.firstBytes(of: 24, from: consumer) == Array(1..<25).map(UInt8.init))
        await producer.close()
        await consumer.close()
    }

    /// The first byte of each of the next `count` records the consumer hands out.
    private static func firstBytes(of count: Int, from consumer: KafkaConsumer) async -> [UInt8] {
        var bytes: [UInt8] = []
        for await m in consumer.messages {
            bytes.append(m.value[0])
            if bytes.count == count { break }
        }
        return bytes
    }

    /// Every record's value handed out until two markers sent to `partition` one after the other
    /// ([99], then [100] once [99] is back) have come back: the consumer has made at least two
    /// fetches after the records sent before them, so what it has not handed out by then it held
    /// back; the absence is seen at a point the consumer had to pass, not waited out. The deadline
    /// only guards against a hang.
    private static func valuesThroughMarkers(
        on partition: Int32, of topic: String, producer: KafkaProducer, from consumer: KafkaConsumer
    ) async throws -> [[UInt8]] {
        var values: [[UInt8]] = []
        let deadline = ContinuousClock.now + .seconds(120)
        for marker: UInt8 in [99, 100] {
            _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [marker], partition: partition))
            while !values.contains([marker]), ContinuousClock.now < deadline {
                if let m = await consumer.poll(timeout: .milliseconds(100)) { values.append(m.value) }
            }
        }
        return values
    }

    @Test("topic creation is idempotent and created topics are listed with their partitions")
    func admin() async throws {
        let admin = KafkaAdmin(configuration: TestServices.clientConfiguration())
        let name = "admin-\(UUID().uuidString.prefix(8).lowercased())"
        let created = try await admin.createTopics([.init(name: name, partitions: 3)])
        #expect(created == [name])
        let again = try await admin.createTopics([.init(name: name, partitions: 3)])
        #expect(again.isEmpty)
        let topics = try await admin.describeTopics()
        #expect(topics[name] == 3)
        #expect(try await admin.listTopics().contains(name))
    }

    /// Bounded by the delivery timeout: a send that hung would end the suite by its time limit.
    @Test("a send to an unreachable broker fails with a typed, retriable error, not a hang")
    func unreachableBroker() async throws {
        let config = KafkaProducerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1"), deliveryTimeout: .seconds(2))
        let producer = try KafkaProducer(configuration: config, logger: logger)
        await #expect {
            _ = try await producer.send(KafkaOutgoingMessage(topic: "nowhere", key: nil, value: [1]))
        } throws: { error in
            guard let error = error as? KafkaError else { return false }
            return error.code == .deliveryFailed && error.isRetriable
        }
        await producer.close()
    }

    @Test("a scan reads every record of its partitions, an empty one included, without joining a group")
    func scanReadsAll() async throws {
        let topic = try await TestServices.makeTopic("scan", partitions: 3)
        let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        for i in 0..<12 {
            _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: Array("\(i)".utf8), partition: Int32(i % 2)))
        }
        await producer.close()
        let scanner = KafkaTopicScanner(configuration: TestServices.clientConfiguration(), idle: .milliseconds(300))
        let all = try await scanner.scan(Dictionary(uniqueKeysWithValues: (0..<3).map { (KafkaTopicPartition(topic: topic, partition: $0), nil) }))
        #expect(all.count == 12)
        #expect(Dictionary(grouping: all, by: \.partition).mapValues(\.count) == [0: 6, 1: 6])
        let fromThird = try await scanner.scan([KafkaTopicPartition(topic: topic, partition: 0): 3])
        #expect(fromThird.map(\.offset) == [3, 4, 5])
    }

    /// An operator's `dlq list` against a broker that does not answer must fail, not say "empty".
    @Test("a scan of a broker that never answers fails with a typed, retriable timeout instead of returning nothing")
    func scanUnreachable() async throws {
        let scanner = KafkaTopicScanner(
            configuration: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1"), idle: .milliseconds(300), answerTimeout: .seconds(2))
        await #expect {
            _ = try await scanner.scan([KafkaTopicPartition(topic: "nowhere", partition: 0): nil])
        } throws: { error in
            guard let error = error as? KafkaError else { return false }
            return error.code == .timedOut && error.isRetriable && error.reason.contains("nowhere[0]")
        }
    }

    @Test("a bad librdkafka setting is refused with the setting's name")
    func badConfiguration() {
        var client = TestServices.clientConfiguration()
        client.properties["no.such.property"] = "1"
        #expect {
            _ = try KafkaProducer(configuration: KafkaProducerConfiguration(client: client), logger: logger)
        } throws: { ($0 as? KafkaError)?.code == .configuration && "\($0)".contains("no.such.property") }
    }
}

final class RecordingListener: KafkaRebalanceListener {
    private let state = Mutex<(assigned: [KafkaTopicPartition], revoked: [KafkaTopicPartition])>(([], []))
    var revoked: [KafkaTopicPartition] { state.withLock { $0.revoked } }
    var assigned: [KafkaTopicPartition] { state.withLock { $0.assigned } }
    func partitionsWillBeRevoked(_ partitions: [KafkaTopicPartition]) { state.withLock { $0.revoked += partitions } }
    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) { state.withLock { $0.assigned += partitions } }
}
