import CRdKafka
import Foundation

/// Reads partitions from chosen offsets without joining a consumer group: for operator tools that
/// inspect a topic (a dead-letter queue, say) and must not disturb any group's positions.
///
/// A scan ends when no record has arrived for ``idle`` or ``limit`` records were read. Watermarks
/// are not trusted to mark the end, because some Kafka-protocol brokers (Tansu) report them late.
public struct KafkaTopicScanner: Sendable {
    public let configuration: KafkaClientConfiguration
    /// How long the topic must stay quiet before the scan ends.
    public var idle: Duration
    /// The most records one scan returns.
    public var limit: Int

    public init(configuration: KafkaClientConfiguration, idle: Duration = .milliseconds(1500), limit: Int = 100_000) {
        self.configuration = configuration
        self.idle = idle
        self.limit = limit
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
        let idleMs = idle.milliseconds
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
                var lastRecord = ContinuousClock.now
                while records.count < limit, (ContinuousClock.now - lastRecord).milliseconds < idleMs {
                    guard let m = rd_kafka_consumer_poll(rk, 100) else { continue }
                    defer { rd_kafka_message_destroy(m) }
                    let error = m.pointee.err
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
