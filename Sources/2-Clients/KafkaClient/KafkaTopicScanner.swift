import CRdKafka
import Foundation

/// Reads partitions from chosen offsets without joining a consumer group: for operator tools that
/// inspect a topic (a dead-letter queue, say) and must not disturb any group's positions.
///
/// A scan ends when every partition has answered (a record or its end) and no record has arrived
/// for ``idle`` since, or ``limit`` records were read. The quiet time counts only once each
/// partition has answered, so a broker slow to serve the first fetch (a loaded machine) does not
/// make a full topic look empty; a partition that never answers within ``answerTimeout`` fails the
/// scan. The reported end is not trusted to be final, because some Kafka-protocol brokers (Tansu)
/// report watermarks late: after it the scan still waits ``idle`` for more.
public struct KafkaTopicScanner: Sendable {
    public let configuration: KafkaClientConfiguration
    /// How long the topic must stay quiet before the scan ends.
    public var idle: Duration
    /// The most records one scan returns.
    public var limit: Int
    /// How long a partition may take to answer its first fetch before the scan fails.
    public var answerTimeout: Duration

    public init(
        configuration: KafkaClientConfiguration, idle: Duration = .milliseconds(1500), limit: Int = 100_000,
        answerTimeout: Duration = .seconds(30)
    ) {
        self.configuration = configuration
        self.idle = idle
        self.limit = limit
        self.answerTimeout = answerTimeout
    }

    /// The records of `partitions` from each one's start offset (`nil`: the beginning), in order per
    /// partition.
    public func scan(_ partitions: [KafkaTopicPartition: Int64?]) async throws -> [KafkaMessage] {
        var props = configuration.baseProperties.merging(configuration.properties) { _, o in o }
        props["group.id"] = "appstore-scanner-\(UUID().uuidString.lowercased())"
        props["enable.auto.commit"] = "false"
        props["enable.auto.offset.store"] = "false"
        props["fetch.wait.max.ms"] = "50"
        props["auto.offset.reset"] = "earliest"
        props["enable.partition.eof"] = "true"
        let idleMs = idle.milliseconds
        let answerMs = answerTimeout.milliseconds
        let limit = self.limit
        return try await Blocking.run { [props] () -> Result<[KafkaMessage], KafkaError> in
            Result { () throws(KafkaError) -> [KafkaMessage] in
                let conf = try RDKafkaConfig.make(props)
                let rk = try RDKafkaConfig.newHandle(type: RD_KAFKA_CONSUMER, conf: conf)
                defer {
                    _ = rd_kafka_assign(rk, nil)
                    rd_kafka_destroy(rk)
                }
                let list = TopicPartitionList(capacity: partitions.count)
                for (partition, offset) in partitions {
                    list.add(partition, offset: offset ?? Int64(RD_KAFKA_OFFSET_BEGINNING))
                }
                let err = rd_kafka_assign(rk, list.pointer)
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(.configuration, err, context: "assign partitions") }
                var records: [KafkaMessage] = []
                var unanswered = Set(partitions.keys)
                let started = ContinuousClock.now
                var lastRecord = started
                while records.count < limit {
                    if unanswered.isEmpty {
                        if (ContinuousClock.now - lastRecord).milliseconds >= idleMs { break }
                    } else if (ContinuousClock.now - started).milliseconds >= answerMs {
                        throw KafkaError(
                            code: .timedOut,
                            reason: "no answer from \(unanswered.map(\.description).sorted()) within \(answerMs) ms",
                            isRetriable: true)
                    }
                    guard let m = rd_kafka_consumer_poll(rk, 100) else { continue }
                    defer { rd_kafka_message_destroy(m) }
                    let error = m.pointee.err
                    if error == RD_KAFKA_RESP_ERR__PARTITION_EOF || error == RD_KAFKA_RESP_ERR_NO_ERROR, let topic = m.pointee.rkt {
                        let answered = KafkaTopicPartition(topic: String(cString: rd_kafka_topic_name(topic)), partition: m.pointee.partition)
                        if unanswered.remove(answered) != nil, unanswered.isEmpty { lastRecord = .now }
                    }
                    if error == RD_KAFKA_RESP_ERR__PARTITION_EOF { continue }
                    guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                        throw .rdKafka(.metadata, error, context: "read \(partitions.keys.map(\.description).sorted())")
                    }
                    records.append(RDKafkaEvents.message(m))
                    lastRecord = .now
                }
                return records
            }
        }.get()
    }
}
