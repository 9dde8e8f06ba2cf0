import EnvironmentSettings
import KafkaClient
import Logging

/// What a stage reads from its environment at start. Every variable is listed in ``variables``
/// (printed by `--help`); a missing or bad one stops the process with one line naming it.
public struct StageConfiguration: Sendable {
    /// The per-stage defaults: which topics, which group, which port.
    public struct Defaults: Sendable {
        public var inputTopic: String?
        public var outputTopic: String?
        public var deadLetterTopic: String?
        public var groupID: String?
        public var httpPort: Int
        public var batchSize: Int
        public init(
            inputTopic: String? = nil, outputTopic: String? = nil, deadLetterTopic: String? = nil, groupID: String? = nil, httpPort: Int,
            batchSize: Int = 1
        ) {
            self.inputTopic = inputTopic
            self.outputTopic = outputTopic
            self.deadLetterTopic = deadLetterTopic
            self.groupID = groupID
            self.httpPort = httpPort
            self.batchSize = batchSize
        }
    }

    public var stageName: String
    public var kafka: KafkaClientConfiguration
    public var groupID: String
    public var inputTopic: String
    public var outputTopic: String
    public var deadLetterTopic: String
    public var httpHost: String
    public var httpPort: Int
    public var consumer: KafkaConsumerConfiguration
    public var producer: KafkaProducerConfiguration
    public var runner: StageRunnerConfiguration
    public var logLevel: Logger.Level
    public var logFormat: LogFormat
    public var shutdownTimeout: Duration

    /// The variables every stage reads: name, default, meaning.
    public static let variables: [(name: String, default: String, meaning: String)] =
        EnvironmentReader.commonVariables + [
            ("KAFKA_GROUP_ID", "appstore.<stage>", "consumer group"),
            ("INPUT_TOPIC / OUTPUT_TOPIC / DLQ_TOPIC", "from schemas/topics.json", "topics"),
            ("KAFKA_ASSIGNOR", "cooperative-sticky", "cooperative-sticky, range or roundrobin"),
            ("KAFKA_SESSION_TIMEOUT_MS", "10000", "group session timeout"),
            ("KAFKA_HEARTBEAT_INTERVAL_MS", "3000", "group heartbeat"),
            ("KAFKA_FETCH_WAIT_MAX_MS", "100", "longest a fetch waits on the broker"),
            ("KAFKA_COMMIT_INTERVAL_MS", "1000", "how often finished offsets are committed"),
            ("KAFKA_DELIVERY_TIMEOUT_MS", "30000", "how long a produce may take before it fails"),
            ("KAFKA_LINGER_MS", "2", "producer batching delay"),
            ("RETRY_INITIAL_MS / RETRY_MAX_MS", "100 / 30000", "backoff for transient failures"),
            ("BATCH_SIZE", "stage default", "records of one partition processed together"),
            ("MAX_BUFFERED_PER_PARTITION", "500", "records buffered before a partition is paused"),
            ("DRAIN_TIMEOUT_MS", "10000", "wait for in-flight records on rebalance and shutdown"),
            ("SHUTDOWN_TIMEOUT_MS", "25000", "graceful shutdown deadline"),
            ("HTTP_HOST / HTTP_PORT", "0.0.0.0 / stage default", "where /health, /ready and /metrics are served"),
        ]

    public init(stage: String, defaults: Defaults, environment env: EnvironmentReader) throws(ConfigurationError) {
        stageName = stage
        kafka = try env.kafkaClient(defaultClientID: stage)
        groupID = env.string("KAFKA_GROUP_ID", default: defaults.groupID ?? "appstore.\(stage)")
        inputTopic = try Self.topic(env, "INPUT_TOPIC", defaults.inputTopic)
        outputTopic = try Self.topic(env, "OUTPUT_TOPIC", defaults.outputTopic)
        deadLetterTopic = try Self.topic(env, "DLQ_TOPIC", defaults.deadLetterTopic)
        httpHost = env.string("HTTP_HOST", default: "0.0.0.0")
        httpPort = try env.int("HTTP_PORT", default: defaults.httpPort, in: 0...65535)
        consumer = KafkaConsumerConfiguration(
            client: kafka, groupID: groupID, topics: [inputTopic],
            assignor: try env.choice("KAFKA_ASSIGNOR", default: .cooperativeSticky),
            sessionTimeout: try env.milliseconds("KAFKA_SESSION_TIMEOUT_MS", default: .seconds(10), in: 1000...3_600_000),
            heartbeatInterval: try env.milliseconds("KAFKA_HEARTBEAT_INTERVAL_MS", default: .seconds(3), in: 100...3_600_000),
            fetchWaitMax: try env.milliseconds("KAFKA_FETCH_WAIT_MAX_MS", default: .milliseconds(100), in: 1...300_000),
            commitInterval: try env.milliseconds("KAFKA_COMMIT_INTERVAL_MS", default: .seconds(1), in: 10...600_000))
        producer = KafkaProducerConfiguration(
            client: kafka,
            deliveryTimeout: try env.milliseconds("KAFKA_DELIVERY_TIMEOUT_MS", default: .seconds(30), in: 100...3_600_000),
            linger: try env.milliseconds("KAFKA_LINGER_MS", default: .milliseconds(2), in: 0...10_000))
        let retry = RetryPolicy(
            initialDelay: try env.milliseconds("RETRY_INITIAL_MS", default: .milliseconds(100), in: 1...600_000),
            maximumDelay: try env.milliseconds("RETRY_MAX_MS", default: .seconds(30), in: 1...3_600_000))
        runner = StageRunnerConfiguration(
            deadLetterTopic: deadLetterTopic, retry: retry,
            maxBatchSize: try env.int("BATCH_SIZE", default: defaults.batchSize, in: 1...10_000),
            maxBufferedPerPartition: try env.int("MAX_BUFFERED_PER_PARTITION", default: 500, in: 2...1_000_000),
            drainTimeout: try env.milliseconds("DRAIN_TIMEOUT_MS", default: .seconds(10), in: 0...600_000))
        logLevel = try env.logLevel()
        logFormat = try env.logFormat()
        shutdownTimeout = try env.milliseconds("SHUTDOWN_TIMEOUT_MS", default: .seconds(25), in: 1000...3_600_000)
    }

    private static func topic(_ env: EnvironmentReader, _ name: String, _ fallback: String?) throws(ConfigurationError) -> String {
        if let v = env.string(name) ?? fallback { return v }
        throw ConfigurationError(variable: name, problem: "is required but not set")
    }
}
