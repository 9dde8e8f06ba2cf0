import KafkaClient
import Logging
import TestSupport
import Testing

/// Who is in a group and what each member holds, as an outsider reads it; and when a consumer
/// becomes a member at all.
@Suite("Group membership on the real broker", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct GroupMembershipTests {
    let logger = TestServices.logger
    let offsets = KafkaGroupOffsets(configuration: TestServices.clientConfiguration("tests-membership"))

    /// A process that fails at start after making its consumer must leave no member behind: the
    /// local broker kept assigning such a group nothing for twenty minutes.
    @Test("a consumer joins on its first poll, not when made; what waits, and who holds it where the broker says; closing leaves the group")
    func membership() async throws {
        let topic = try await TestServices.makeTopic("membership", partitions: 3)
        let group = TestServices.uniqueGroup("membership")
        let consumer = try KafkaConsumer(configuration: TestServices.consumerConfiguration(group: group, topics: [topic]), logger: logger)
        let producer = try TestServices.makeProducer()
        for p in 0..<3 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [UInt8(p)], partition: Int32(p))) }
        // Three acknowledged sends later the consumer, never polled, is still no member.
        #expect(try await offsets.describeGroup(group)?.members.isEmpty ?? true, "made but never polled: not a member")

        var seen = 0
        for await message in consumer.messages {
            try consumer.storeOffset(message)
            seen += 1
            if seen == 3 { break }
        }
        try await consumer.commit()
        let members = try #require(try await offsets.describeGroup(group)?.members)
        #expect(members.count == 1)
        let all = Set((0..<3).map { KafkaTopicPartition(topic: topic, partition: Int32($0)) })
        // Apache Kafka reports each member's assignment; the local Tansu reports none (nil: unknown).
        if let assignment = members.first?.assignment { #expect(Set(assignment) == all, "the member holds all three partitions") }
        let idle = try await offsets.waiting(group: group, topic: topic)
        #expect(idle.lag.isEmpty, "nothing waits: \(idle)")
        #expect(idle.held == members.first?.assignment.map(Set.init))

        let p1 = KafkaTopicPartition(topic: topic, partition: 1)
        _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [9], partition: 1))
        _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [9], partition: 1))
        await producer.close()
        let busy = try await offsets.waiting(group: group, topic: topic)
        #expect(busy.lag == [p1: 2] && busy.committed == [p1: 1], "\(busy)")

        await consumer.close()
        #expect(try await offsets.describeGroup(group)?.members.isEmpty ?? true, "closing left the group")
        let left = try await offsets.waiting(group: group, topic: topic)
        #expect(left.lag == [p1: 2] && left.held == [], "with no member, nobody holds what waits: \(left)")
    }
}
