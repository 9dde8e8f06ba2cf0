import CRdKafka
import Foundation
import Logging

/// Topic administration: create topics with their partition counts (idempotently) and list them.
public struct KafkaAdmin: Sendable {
    /// A topic to create.
    public struct TopicSpec: Sendable, Hashable {
        public var name: String
        public var partitions: Int
        public var replicationFactor: Int
        public init(name: String, partitions: Int, replicationFactor: Int = 1) {
            self.name = name
            self.partitions = partitions
            self.replicationFactor = replicationFactor
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
        let props = configuration.baseProperties.merging(configuration.properties) { _, o in o }
        let timeoutMs = Int32(clamping: timeout.milliseconds)
        return try await Blocking.run { () -> Result<[String], KafkaError> in
            Result { () throws(KafkaError) in
                try Self.withHandle(props) { (rk) throws(KafkaError) -> [String] in
                    try Self.createTopics(rk, topics, timeoutMs: timeoutMs)
                }
            }
        }.get()
    }

    /// The names of the topics the cluster has (internal topics excluded).
    public func listTopics() async throws -> [String] {
        try await describeTopics().keys.sorted()
    }

    /// Every topic's partition count.
    public func describeTopics() async throws -> [String: Int] {
        let props = configuration.baseProperties.merging(configuration.properties) { _, o in o }
        let timeoutMs = Int32(clamping: timeout.milliseconds)
        return try await Blocking.run { () -> Result<[String: Int], KafkaError> in
            Result { () throws(KafkaError) in
                try Self.withHandle(props) { (rk) throws(KafkaError) -> [String: Int] in
                    var md: UnsafePointer<rd_kafka_metadata>?
                    let err = rd_kafka_metadata(rk, 1, nil, &md, timeoutMs)
                    guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let md else {
                        throw .rdKafka(.metadata, err, context: "read metadata")
                    }
                    defer { rd_kafka_metadata_destroy(md) }
                    var result: [String: Int] = [:]
                    for i in 0..<Int(md.pointee.topic_cnt) {
                        let t = md.pointee.topics[i]
                        let name = String(cString: t.topic)
                        guard t.err == RD_KAFKA_RESP_ERR_NO_ERROR, !name.hasPrefix("__") else { continue }
                        result[name] = Int(t.partition_cnt)
                    }
                    return result
                }
            }
        }.get()
    }

    private static func withHandle<T>(_ props: [String: String], _ body: (OpaquePointer) throws(KafkaError) -> T) throws(KafkaError) -> T {
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
        }
        let queue = rd_kafka_queue_new(rk)!
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMs, &errstr, errstr.count)
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMs, &errstr, errstr.count)
        rd_kafka_CreateTopics(rk, &newTopics, newTopics.count, options, queue)
        guard let event = rd_kafka_queue_poll(queue, timeoutMs + 1000) else {
            throw KafkaError(code: .timedOut, reason: "create topics: no answer", isRetriable: true)
        }
        defer { rd_kafka_event_destroy(event) }
        let err = rd_kafka_event_error(event)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let result = rd_kafka_event_CreateTopics_result(event) else {
            throw .rdKafka(.admin, err, context: "create topics")
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
