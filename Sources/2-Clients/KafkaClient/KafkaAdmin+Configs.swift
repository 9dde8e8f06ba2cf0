import CRdKafka

/// What `appstorectl topics apply` needs beyond creating topics: the cluster's layout (brokers,
/// partitions, replication), and reading and changing topic configs.
extension KafkaAdmin {
    /// One topic as the cluster's metadata shows it.
    public struct TopicLayout: Sendable, Hashable {
        public var partitions: Int
        /// The fewest replicas any of its partitions has: the weakest partition decides durability.
        public var replicationFactor: Int

        public init(partitions: Int, replicationFactor: Int) {
            self.partitions = partitions
            self.replicationFactor = replicationFactor
        }
    }

    /// The cluster as metadata shows it: the brokers that are up and every topic's layout
    /// (internal `__` topics excluded).
    public struct ClusterLayout: Sendable, Hashable {
        public var brokerCount: Int
        public var topics: [String: TopicLayout]

        public init(brokerCount: Int, topics: [String: TopicLayout]) {
            self.brokerCount = brokerCount
            self.topics = topics
        }
    }

    /// Reads the cluster's metadata once. Fails with a retriable error while no broker answers.
    public func clusterLayout() async throws -> ClusterLayout {
        try await onHandle { (rk, timeoutMs) throws(KafkaError) -> ClusterLayout in
            var md: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(rk, 1, nil, &md, timeoutMs)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let md else { throw .rdKafka(.metadata, err, context: "read metadata") }
            defer { rd_kafka_metadata_destroy(md) }
            var topics: [String: TopicLayout] = [:]
            for i in 0..<Int(md.pointee.topic_cnt) {
                let t = md.pointee.topics[i]
                let name = String(cString: t.topic)
                guard t.err == RD_KAFKA_RESP_ERR_NO_ERROR, !name.hasPrefix("__") else { continue }
                let replicas = (0..<Int(t.partition_cnt)).map { Int(t.partitions[$0].replica_cnt) }
                topics[name] = TopicLayout(partitions: Int(t.partition_cnt), replicationFactor: replicas.min() ?? 0)
            }
            return ClusterLayout(brokerCount: Int(md.pointee.broker_cnt), topics: topics)
        }
    }

    /// Each topic's configs as the broker reports them (DescribeConfigs). Apache Kafka reports
    /// every config, defaults included; a broker that keeps only what was set reports those, so a
    /// missing key means "not set". Sensitive values (reported as null) are left out.
    /// Fails with ``KafkaError/isUnsupportedByBroker`` when the broker lacks DescribeConfigs.
    public func describeTopicConfigs(_ topics: [String]) async throws -> [String: [String: String]] {
        guard !topics.isEmpty else { return [:] }
        return try await onHandle { (rk, timeoutMs) throws(KafkaError) -> [String: [String: String]] in
            let resources = ConfigResources(topics)
            let event = try Self.adminRequest(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeoutMs: timeoutMs, context: "describe topic configs") {
                rd_kafka_DescribeConfigs(rk, resources.pointers.baseAddress, resources.pointers.count, $0, $1)
            }
            defer { rd_kafka_event_destroy(event) }
            guard let result = rd_kafka_event_DescribeConfigs_result(event) else {
                throw KafkaError(code: .admin, reason: "describe topic configs: the answer was not a DescribeConfigs result")
            }
            var count = 0
            guard let described = rd_kafka_DescribeConfigs_result_resources(result, &count) else { return [:] }
            var configs: [String: [String: String]] = [:]
            for i in 0..<count {
                guard let resource = described[i] else { continue }
                let name = String(cString: rd_kafka_ConfigResource_name(resource))
                try Self.check(resource, context: "describe the configs of \(name)")
                var entryCount = 0
                var values: [String: String] = [:]
                if let entries = rd_kafka_ConfigResource_configs(resource, &entryCount) {
                    for j in 0..<entryCount {
                        guard let entry = entries[j], let value = rd_kafka_ConfigEntry_value(entry) else { continue }
                        values[String(cString: rd_kafka_ConfigEntry_name(entry))] = String(cString: value)
                    }
                }
                configs[name] = values
            }
            return configs
        }
    }

    /// Sets configs of existing topics (IncrementalAlterConfigs, SET): the named keys change and
    /// every other config stays as it is. (The older AlterConfigs would reset every config it is not
    /// given to the broker default.) Needs Apache Kafka 2.3 or newer.
    public func alterTopicConfigs(_ changes: [String: [String: String]]) async throws {
        let changes = changes.filter { !$0.value.isEmpty }
        guard !changes.isEmpty else { return }
        try await onHandle { (rk, timeoutMs) throws(KafkaError) in
            let resources = ConfigResources(changes.keys.sorted())
            for (index, topic) in resources.names.enumerated() {
                for (key, value) in changes[topic, default: [:]].sorted(by: { $0.key < $1.key }) {
                    if let error = rd_kafka_ConfigResource_add_incremental_config(
                        resources.pointers[index], key, RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET, value)
                    {
                        throw .rdKafka(.admin, taking: error, context: "set \(key) of \(topic)")
                    }
                }
            }
            let event = try Self.adminRequest(
                rk, RD_KAFKA_ADMIN_OP_INCREMENTALALTERCONFIGS, timeoutMs: timeoutMs, context: "alter topic configs"
            ) { rd_kafka_IncrementalAlterConfigs(rk, resources.pointers.baseAddress, resources.pointers.count, $0, $1) }
            defer { rd_kafka_event_destroy(event) }
            guard let result = rd_kafka_event_IncrementalAlterConfigs_result(event) else {
                throw KafkaError(code: .admin, reason: "alter topic configs: the answer was not an IncrementalAlterConfigs result")
            }
            var count = 0
            guard let altered = rd_kafka_IncrementalAlterConfigs_result_resources(result, &count) else { return }
            for i in 0..<count {
                guard let resource = altered[i] else { continue }
                try Self.check(resource, context: "alter the configs of \(String(cString: rd_kafka_ConfigResource_name(resource)))")
            }
        }
    }

    /// Runs `body` on a short-lived handle off the cooperative pool (every admin call blocks).
    func onHandle<T: Sendable>(_ body: @escaping @Sendable (OpaquePointer, Int32) throws(KafkaError) -> T) async throws -> T {
        let props = configuration.baseProperties.merging(configuration.properties) { _, o in o }
        let timeoutMs = Int32(clamping: timeout.milliseconds)
        return try await Blocking.run { () -> Result<T, KafkaError> in
            Result { () throws(KafkaError) -> T in
                try Self.withHandle(props) { (rk) throws(KafkaError) -> T in try body(rk, timeoutMs) }
            }
        }.get()
    }

    /// Issues one admin request (`issue` gets the options and the result queue) and returns its
    /// result event, which the caller destroys. Fails when the request as a whole failed.
    static func adminRequest(
        _ rk: OpaquePointer, _ operation: rd_kafka_admin_op_t, timeoutMs: Int32, context: String,
        _ issue: (OpaquePointer?, OpaquePointer?) -> Void
    ) throws(KafkaError) -> OpaquePointer {
        var errstr = [CChar](repeating: 0, count: 512)
        let queue = rd_kafka_queue_new(rk)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(rk, operation)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMs, &errstr, errstr.count)
        if operation == RD_KAFKA_ADMIN_OP_CREATETOPICS {
            _ = rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMs, &errstr, errstr.count)
        }
        issue(options, queue)
        guard let event = rd_kafka_queue_poll(queue, timeoutMs + 1000) else {
            throw KafkaError(code: .timedOut, reason: "\(context): no answer", isRetriable: true)
        }
        let err = rd_kafka_event_error(event)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            let detail = rd_kafka_event_error_string(event).map { String(cString: $0) } ?? ""
            rd_kafka_event_destroy(event)
            let error = KafkaError.rdKafka(.admin, err, context: context)
            throw detail.isEmpty
                ? error
                : KafkaError(
                    code: error.code, reason: "\(context): \(detail)", rdKafkaCode: error.rdKafkaCode,
                    isRetriable: error.isRetriable, isFatal: error.isFatal)
        }
        return event
    }

    /// Fails with the per-resource error of a config result, if it has one.
    private static func check(_ resource: OpaquePointer, context: String) throws(KafkaError) {
        let err = rd_kafka_ConfigResource_error(resource)
        guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return }
        let reason = rd_kafka_ConfigResource_error_string(resource).map { String(cString: $0) } ?? String(cString: rd_kafka_err2str(err))
        throw KafkaError(
            code: .admin, reason: "\(context): \(reason)", rdKafkaCode: err.rawValue, isRetriable: RDKafkaErrors.isRetriable(err))
    }
}

extension KafkaError {
    /// True when the broker does not implement the request (an older Kafka, or a Kafka-protocol
    /// broker that lacks the API): asking again will not help.
    public var isUnsupportedByBroker: Bool {
        rdKafkaCode == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE.rawValue
            || rdKafkaCode == RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION.rawValue
    }
}

/// Topic config resources for one request, destroyed with it.
private final class ConfigResources {
    let names: [String]
    let pointers: UnsafeMutableBufferPointer<OpaquePointer?>

    init(_ topics: [String]) {
        names = topics
        pointers = .allocate(capacity: topics.count)
        for (i, topic) in topics.enumerated() { pointers[i] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic) }
    }

    deinit {
        rd_kafka_ConfigResource_destroy_array(pointers.baseAddress, pointers.count)
        pointers.deallocate()
    }
}
