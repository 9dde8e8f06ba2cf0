import CRdKafka
import Foundation
import Logging

/// Topic administration: create topics with their partition counts and configs (idempotently) and
/// list them; reading and changing topic configs is in KafkaAdmin+Configs.swift.
public struct KafkaAdmin: Sendable {
    /// A topic to create.
    public struct TopicSpec: Sendable, Hashable {
        public var name: String
        public var partitions: Int
        public var replicationFactor: Int
        /// Broker-side topic configs set at creation (`retention.ms`, `min.insync.replicas`, …);
        /// the broker validates them.
        public var configs: [String: String]
        public init(name: String, partitions: Int, replicationFactor: Int = 1, configs: [String: String] = [:]) {
            self.name = name
            self.partitions = partitions
            self.replicationFactor = replicationFactor
            self.configs = configs
        }
    }

    public let configuration: KafkaClientConfiguration
    public let timeout: Duration

    public init(configuration: KafkaClientConfiguration, timeout: Duration = .seconds(15)) {
        self.configuration = configuration
        self.timeout = timeout
    }

    /// Creates the topics that do not exist yet; existing ones are left as they are.
    /// - Returns: the names that were created by this call.
    @discardableResult
    public func createTopics(_ topics: [TopicSpec]) async throws -> [String] {
        try await onHandle { (rk, timeoutMs) throws(KafkaError) -> [String] in
            try Self.createTopics(rk, topics, timeoutMs: timeoutMs)
        }
    }

    /// The names of the topics the cluster has (internal topics excluded).
    public func listTopics() async throws -> [String] {
        try await describeTopics().keys.sorted()
    }

    /// Every topic's partition count.
    public func describeTopics() async throws -> [String: Int] {
        try await clusterLayout().topics.mapValues(\.partitions)
    }

    static func withHandle<T>(_ props: [String: String], _ body: (OpaquePointer) throws(KafkaError) -> T) throws(KafkaError) -> T {
        let conf = try RDKafkaConfig.make(props)
        let rk = try RDKafkaConfig.newHandle(type: RD_KAFKA_PRODUCER, conf: conf)
        defer { rd_kafka_destroy(rk) }
        return try body(rk)
    }

    private static func createTopics(_ rk: OpaquePointer, _ topics: [TopicSpec], timeoutMs: Int32) throws(KafkaError) -> [String] {
        guard !topics.isEmpty else { return [] }
        var errstr = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { for t in newTopics { rd_kafka_NewTopic_destroy(t) } }
        for spec in topics {
            guard let t = rd_kafka_NewTopic_new(spec.name, Int32(spec.partitions), Int32(spec.replicationFactor), &errstr, errstr.count) else {
                let reason = errstr.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                throw KafkaError(code: .admin, reason: "topic \(spec.name): \(reason)")
            }
            newTopics.append(t)
            for (key, value) in spec.configs.sorted(by: { $0.key < $1.key }) {
                let err = rd_kafka_NewTopic_set_config(t, key, value)
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(.admin, err, context: "topic \(spec.name): config \(key)") }
            }
        }
        let event = try adminRequest(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeoutMs: timeoutMs, context: "create topics") {
            rd_kafka_CreateTopics(rk, &newTopics, newTopics.count, $0, $1)
        }
        defer { rd_kafka_event_destroy(event) }
        guard let result = rd_kafka_event_CreateTopics_result(event) else {
            throw KafkaError(code: .admin, reason: "create topics: the answer was not a CreateTopics result")
        }
        var count = 0
        guard let results = rd_kafka_CreateTopics_result_topics(result, &count) else { return [] }
        var created: [String] = []
        for i in 0..<count {
            let r = results[i]
            let name = String(cString: rd_kafka_topic_result_name(r))
            let e = rd_kafka_topic_result_error(r)
            switch e {
            case RD_KAFKA_RESP_ERR_NO_ERROR: created.append(name)
            case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS: continue
            default:
                let reason = rd_kafka_topic_result_error_string(r).map { String(cString: $0) } ?? ""
                throw KafkaError(code: .admin, reason: "create \(name): \(reason)", rdKafkaCode: e.rawValue)
            }
        }
        return created
    }
}
