import CRdKafka

/// Builds an `rd_kafka_conf_t` from string properties. The result is owned by the caller until
/// `rd_kafka_new` succeeds, which takes it over.
enum RDKafkaConfig {
    static func make(_ properties: [String: String]) throws(KafkaError) -> OpaquePointer {
        let conf = rd_kafka_conf_new()!
        var errstr = [CChar](repeating: 0, count: 512)
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            let result = rd_kafka_conf_set(conf, key, value, &errstr, errstr.count)
            if result != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                let reason = errstr.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                throw KafkaError(code: .configuration, reason: "\(key): \(reason)")
            }
        }
        return conf
    }

    /// Creates a client handle; destroys `conf` itself when creation fails.
    static func newHandle(type: rd_kafka_type_t, conf: OpaquePointer) throws(KafkaError) -> OpaquePointer {
        var errstr = [CChar](repeating: 0, count: 512)
        guard let rk = rd_kafka_new(type, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            let reason = errstr.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw KafkaError(code: .clientCreation, reason: reason)
        }
        return rk
    }
}

/// Owns an `rd_kafka_topic_partition_list_t` and always destroys it: a leaked list makes a later
/// `rd_kafka_destroy` hang.
final class TopicPartitionList {
    let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    init(capacity: Int = 1) {
        pointer = rd_kafka_topic_partition_list_new(Int32(max(capacity, 1)))
    }

    /// Takes ownership of a list librdkafka handed over.
    init(taking pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        self.pointer = pointer
    }

    /// Copies a list librdkafka keeps ownership of.
    convenience init(copying pointer: UnsafePointer<rd_kafka_topic_partition_list_t>) {
        self.init(taking: rd_kafka_topic_partition_list_copy(pointer))
    }

    deinit { rd_kafka_topic_partition_list_destroy(pointer) }

    func add(_ tp: KafkaTopicPartition, offset: Int64? = nil) {
        let element = rd_kafka_topic_partition_list_add(pointer, tp.topic, tp.partition)!
        if let offset { element.pointee.offset = offset }
    }

    var entries: [(partition: KafkaTopicPartition, offset: Int64, error: rd_kafka_resp_err_t)] {
        (0..<Int(pointer.pointee.cnt)).map { i in
            let e = pointer.pointee.elems[i]
            return (KafkaTopicPartition(topic: String(cString: e.topic), partition: e.partition), e.offset, e.err)
        }
    }

    var partitions: [KafkaTopicPartition] { entries.map(\.partition) }

    static func of(_ partitions: some Sequence<KafkaTopicPartition>) -> TopicPartitionList {
        let list = TopicPartitionList(capacity: 8)
        for p in partitions { list.add(p) }
        return list
    }
}
