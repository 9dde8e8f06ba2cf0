import KafkaClient
import TestSupport
import Testing

/// A consumer's handle is reachable only through its state machine, and only while open: a call
/// made after ``KafkaConsumer/close()`` is refused as closed, and a call racing the close finishes
/// on a live handle (a check-then-use would hand it a destroyed one, and crash).
@Suite("Kafka consumer lifecycle", .timeLimit(.minutes(15)))
struct ConsumerLifecycleTests {
    let logger = TestServices.logger

    @Test("a closed consumer refuses every call as closed, its stream ends, and a second close does nothing")
    func closedRefuses() async throws {
        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1"), groupID: "never-joins", topics: ["nowhere"]),
            logger: logger)
        await consumer.close()
        let p0 = KafkaTopicPartition(topic: "nowhere", partition: 0)
        let isClosed: (any Error) -> Bool = { ($0 as? KafkaError)?.code == .closed }
        #expect(performing: { try consumer.subscribe() }, throws: isClosed)
        #expect(performing: { try consumer.storeOffset(p0, nextOffset: 1) }, throws: isClosed)
        #expect(performing: { try consumer.pause([p0]) }, throws: isClosed)
        #expect(performing: { try consumer.resume([p0]) }, throws: isClosed)
        await #expect(performing: { try await consumer.commit() }, throws: isClosed)
        #expect(consumer.lag().isEmpty)
        #expect(consumer.assignment.isEmpty)
        #expect(await consumer.poll(timeout: .milliseconds(10)) == nil)
        var stream = consumer.messages.makeAsyncIterator()
        #expect(await stream.next() == nil)
        await consumer.close()
    }

    @Test(
        "calls racing close either work or are refused as closed, never on a destroyed handle; after close all are refused",
        .enabled(if: TestServices.brokerEnabled))
    func callsRacingClose() async throws {
        let topic = try await TestServices.makeTopic("close-race", partitions: 2)
        let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        for p in 0..<2 { _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: [UInt8(p)], partition: Int32(p))) }
        await producer.close()
        for round in 0..<5 {
            let consumer = try KafkaConsumer(
                configuration: TestServices.consumerConfiguration(group: TestServices.uniqueGroup("close-race-\(round)"), topics: [topic]),
                logger: logger)
            // In the group, with a record in hand.
            var stream = consumer.messages.makeAsyncIterator()
            let first = try #require(await stream.next())
            let refused = await withTaskGroup(of: Bool.self) { group in
                for caller in 0..<4 {
                    group.addTask {
                        // Until refused as closed; any other failure (librdkafka answering a call on a
                        // closing handle) is allowed, a crash is not.
                        while true {
                            do {
                                switch caller {
                                case 0: try consumer.storeOffset(first)
                                case 1: try consumer.pause([first.topicPartition])
                                case 2: try consumer.resume([first.topicPartition])
                                default:
                                    _ = consumer.lag()
                                    try consumer.storeOffset(first.topicPartition, nextOffset: first.offset)
                                }
                            } catch let error as KafkaError where error.code == .closed {
                                return true
                            } catch {}
                            await Task.yield()
                        }
                    }
                }
                group.addTask {
                    await consumer.close()
                    return false
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(refused == 4, "every caller was refused once the consumer closed")
            #expect(performing: { try consumer.storeOffset(first) }, throws: { ($0 as? KafkaError)?.code == .closed })
        }
    }
}
