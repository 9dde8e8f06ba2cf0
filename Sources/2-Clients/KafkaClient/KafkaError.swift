import CRdKafka

/// Every failure the Kafka module reports. A struct with a stable ``Code`` so callers can switch on
/// the kind of failure, plus librdkafka's own code and reason for the log.
public struct KafkaError: Error, Sendable, CustomStringConvertible {
    /// Stable, comparable kinds of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A librdkafka setting was rejected while building a client.
        public static let configuration = Code("kafka.configuration")
        /// librdkafka refused to create a client handle.
        public static let clientCreation = Code("kafka.client_creation")
        /// The broker did not acknowledge a message (timed out, purged, or refused).
        public static let deliveryFailed = Code("kafka.delivery_failed")
        /// The local producer queue is full; back off and retry.
        public static let queueFull = Code("kafka.queue_full")
        /// A message is larger than the configured maximum.
        public static let messageTooLarge = Code("kafka.message_too_large")
        /// Committing or storing offsets failed.
        public static let offsetCommit = Code("kafka.offset_commit")
        /// A topic administration request failed.
        public static let admin = Code("kafka.admin")
        /// Metadata could not be read from the cluster.
        public static let metadata = Code("kafka.metadata")
        /// The client was already closed.
        public static let closed = Code("kafka.closed")
        /// An operation did not finish within its deadline.
        public static let timedOut = Code("kafka.timed_out")
    }

    public let code: Code
    /// librdkafka's `rd_kafka_resp_err_t`, when the failure came from it.
    public let rdKafkaCode: Int32?
    public let reason: String
    /// True when the same operation may succeed later (broker down, queue full, timeouts).
    public let isRetriable: Bool
    /// True when the client is unusable and must be replaced.
    public let isFatal: Bool

    public init(code: Code, reason: String, rdKafkaCode: Int32? = nil, isRetriable: Bool = false, isFatal: Bool = false) {
        self.code = code
        self.reason = reason
        self.rdKafkaCode = rdKafkaCode
        self.isRetriable = isRetriable
        self.isFatal = isFatal
    }

    public var description: String {
        if let rdKafkaCode { return "\(code): \(reason) (librdkafka \(rdKafkaCode))" }
        return "\(code): \(reason)"
    }

    static func rdKafka(_ code: Code, _ err: rd_kafka_resp_err_t, context: String) -> KafkaError {
        let text = String(cString: rd_kafka_err2str(err))
        return KafkaError(
            code: code,
            reason: "\(context): \(text)",
            rdKafkaCode: err.rawValue,
            isRetriable: RDKafkaErrors.isRetriable(err),
            isFatal: err == RD_KAFKA_RESP_ERR__FATAL
        )
    }

    static func rdKafka(_ code: Code, taking error: OpaquePointer, context: String) -> KafkaError {
        defer { rd_kafka_error_destroy(error) }
        let err = rd_kafka_error_code(error)
        let text = String(cString: rd_kafka_error_string(error))
        return KafkaError(
            code: err == RD_KAFKA_RESP_ERR__QUEUE_FULL
                ? .queueFull
                : err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ? .messageTooLarge : code,
            reason: "\(context): \(text)",
            rdKafkaCode: err.rawValue,
            isRetriable: rd_kafka_error_is_retriable(error) != 0 || RDKafkaErrors.isRetriable(err),
            isFatal: rd_kafka_error_is_fatal(error) != 0
        )
    }
}

enum RDKafkaErrors {
    /// Codes after which a failed operation can be tried again unchanged.
    static func isRetriable(_ err: rd_kafka_resp_err_t) -> Bool {
        switch err {
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__QUEUE_FULL,
            RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__PURGE_QUEUE,
            RD_KAFKA_RESP_ERR__PURGE_INFLIGHT, RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
            RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
            RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
            RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, RD_KAFKA_RESP_ERR_UNKNOWN_PRODUCER_ID,
            RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH,
            RD_KAFKA_RESP_ERR__FATAL, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
            RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
            return true
        default:
            return false
        }
    }

    /// Codes after which an idempotent producer handle is known to be stuck or dead and must be
    /// replaced (after a broker restart it can loop on "unknown producer id" until messages time out).
    static func poisonsProducer(_ err: rd_kafka_resp_err_t) -> Bool {
        switch err {
        case RD_KAFKA_RESP_ERR__FATAL, RD_KAFKA_RESP_ERR_UNKNOWN_PRODUCER_ID,
            RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH,
            RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
            return true
        default:
            return false
        }
    }
}
