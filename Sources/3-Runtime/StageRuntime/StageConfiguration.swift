import EnvironmentSettings
import KafkaClient
import Logging
import PipelineRecords

/// What a stage reads from its environment at start. Every variable is declared once in
/// ``Settings`` (read here, printed by `--help` through ``variables(stage:defaults:)``); a missing
/// or bad one stops the process with one line naming it.
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

        /// A pipeline stage's defaults: its group and topics from ``PipelineStages``, so they are
        /// written once; `outputTopic` replaces the stage's own (grant's outbox topic).
        public init(stage: PipelineStageInfo, outputTopic: String? = nil, httpPort: Int, batchSize: Int = 1) {
            self.init(
                inputTopic: stage.inputTopic, outputTopic: outputTopic ?? stage.outputTopic, deadLetterTopic: stage.deadLetterTopic,
                groupID: stage.groupID, httpPort: httpPort, batchSize: batchSize)
        }
    }

    /// The variables whose default depends on the stage.
    public struct Settings: Sendable {
        public let groupID: Setting<String>
        public let inputTopic: Setting<String>
        public let outputTopic: Setting<String>
        public let deadLetterTopic: Setting<String>
        public let httpPort: Setting<Int>
        public let batchSize: Setting<Int>

        public init(stage: String, defaults: Defaults) {
            groupID = .text("KAFKA_GROUP_ID", default: defaults.groupID ?? "appstore.\(stage)", meaning: "consumer group")
            inputTopic = Self.topic("INPUT_TOPIC", defaults.inputTopic, "the topic consumed")
            outputTopic = Self.topic("OUTPUT_TOPIC", defaults.outputTopic, "the topic produced")
            deadLetterTopic = Self.topic("DLQ_TOPIC", defaults.deadLetterTopic, "where records that cannot be processed go")
            httpPort = .int("HTTP_PORT", default: defaults.httpPort, in: 0...65535, meaning: "where /health, /ready and /metrics are served")
            batchSize = .int("BATCH_SIZE", default: defaults.batchSize, in: 1...10_000, meaning: "records of one partition processed together")
        }

        private static func topic(_ name: String, _ fallback: String?, _ meaning: String) -> Setting<String> {
            if let fallback { return .text(name, default: fallback, meaning: meaning) }
            return .required(name, meaning: meaning)
        }
    }

    public static let httpHost = Setting<String>.text("HTTP_HOST", default: "0.0.0.0", meaning: "the address the HTTP server listens on")
    public static let assignor = Setting<KafkaConsumerConfiguration.Assignor>.choice(
        "KAFKA_ASSIGNOR", default: .cooperativeSticky, meaning: "cooperative-sticky, range or roundrobin")
    public static let sessionTimeout = Setting<Duration>.milliseconds(
        "KAFKA_SESSION_TIMEOUT_MS", default: .seconds(10), in: 1000...3_600_000, meaning: "group session timeout")
    public static let heartbeatInterval = Setting<Duration>.milliseconds(
        "KAFKA_HEARTBEAT_INTERVAL_MS", default: .seconds(3), in: 100...3_600_000, meaning: "group heartbeat")
    public static let fetchWaitMax = Setting<Duration>.milliseconds(
        "KAFKA_FETCH_WAIT_MAX_MS", default: .milliseconds(100), in: 1...300_000, meaning: "longest a fetch waits on the broker")
    public static let commitInterval = Setting<Duration>.milliseconds(
        "KAFKA_COMMIT_INTERVAL_MS", default: .seconds(1), in: 10...600_000, meaning: "how often finished offsets are committed")
    public static let deliveryTimeout = Setting<Duration>.milliseconds(
        "KAFKA_DELIVERY_TIMEOUT_MS", default: .seconds(30), in: 100...3_600_000, meaning: "how long a produce may take before it fails")
    public static let linger = Setting<Duration>.milliseconds(
        "KAFKA_LINGER_MS", default: .milliseconds(2), in: 0...10_000, meaning: "producer batching delay")
    public static let compression = Setting<KafkaCompression>.choice(
        "KAFKA_COMPRESSION", default: .lz4, ignoringCase: true, meaning: "how produced batches are compressed: none, gzip, snappy, lz4, zstd")
    public static let retryInitial = Setting<Duration>.milliseconds(
        "RETRY_INITIAL_MS", default: .milliseconds(100), in: 1...600_000, meaning: "first backoff for transient failures")
    public static let retryMax = Setting<Duration>.milliseconds(
        "RETRY_MAX_MS", default: .seconds(30), in: 1...3_600_000, meaning: "longest backoff for transient failures")
    public static let retryCapAttempts = Setting<Int>.int(
        "RETRY_CAP_ATTEMPTS", default: 10, in: 0...1_000_000,
        meaning: "attempts after which a record failing alone (others succeed) is dead-lettered; 0: never")
    public static let retryCapTime = Setting<Duration>.milliseconds(
        "RETRY_CAP_MS", default: .seconds(120), in: 0...86_400_000,
        meaning: "time since a record's first failure before the retry cap may dead-letter it")
    public static let maxBufferedPerPartition = Setting<Int>.int(
        "MAX_BUFFERED_PER_PARTITION", default: 500, in: 2...1_000_000, meaning: "records buffered before a partition is paused")
    public static let maxParkedPerPartition = Setting<Int>.int(
        "MAX_PARKED_PER_PARTITION", default: 100, in: 0...100_000,
        meaning: "records set aside after a failure of their own while the partition moves on; 0: retry in place only")
    public static let drainTimeout = Setting<Duration>.milliseconds(
        "DRAIN_TIMEOUT_MS", default: .seconds(10), in: 0...600_000, meaning: "wait for in-flight records on rebalance and shutdown")
    /// Shared with ingest, which stops the same way.
    public static let shutdownTimeout = Setting<Duration>.milliseconds(
        "SHUTDOWN_TIMEOUT_MS", default: .seconds(25), in: 1000...3_600_000, meaning: "graceful shutdown deadline")

    /// The variables the stage called `stage` reads, with its defaults, for `--help`.
    public static func variables(stage: String, defaults: Defaults) -> [SettingDescription] {
        let settings = Settings(stage: stage, defaults: defaults)
        return CommonSettings.variables(clientID: stage) + [
            settings.groupID.help, settings.inputTopic.help, settings.outputTopic.help, settings.deadLetterTopic.help,
            assignor.help, sessionTimeout.help, heartbeatInterval.help, fetchWaitMax.help, commitInterval.help,
            deliveryTimeout.help, linger.help, compression.help, retryInitial.help, retryMax.help, retryCapAttempts.help,
            retryCapTime.help, settings.batchSize.help,
            maxBufferedPerPartition.help, maxParkedPerPartition.help, drainTimeout.help, shutdownTimeout.help, httpHost.help, settings.httpPort.help,
        ]
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

    public init(stage: String, defaults: Defaults, environment env: EnvironmentReader) throws(ConfigurationError) {
        let settings = Settings(stage: stage, defaults: defaults)
        stageName = stage
        kafka = try env.kafkaClient(defaultClientID: stage)
        groupID = try env.read(settings.groupID)
        inputTopic = try env.read(settings.inputTopic)
        outputTopic = try env.read(settings.outputTopic)
        deadLetterTopic = try env.read(settings.deadLetterTopic)
        httpHost = try env.read(Self.httpHost)
        httpPort = try env.read(settings.httpPort)
        consumer = KafkaConsumerConfiguration(
            client: kafka, groupID: groupID, topics: [inputTopic],
            assignor: try env.read(Self.assignor),
            sessionTimeout: try env.read(Self.sessionTimeout),
            heartbeatInterval: try env.read(Self.heartbeatInterval),
            fetchWaitMax: try env.read(Self.fetchWaitMax),
            commitInterval: try env.read(Self.commitInterval))
        producer = KafkaProducerConfiguration(
            client: kafka, deliveryTimeout: try env.read(Self.deliveryTimeout), linger: try env.read(Self.linger),
            compression: try env.read(Self.compression))
        let retry = RetryPolicy(
            initialDelay: try env.read(Self.retryInitial), maximumDelay: try env.read(Self.retryMax),
            capAttempts: try env.read(Self.retryCapAttempts), capTime: try env.read(Self.retryCapTime))
        runner = StageRunnerConfiguration(
            deadLetterTopic: deadLetterTopic, retry: retry,
            maxBatchSize: try env.read(settings.batchSize),
            maxBufferedPerPartition: try env.read(Self.maxBufferedPerPartition),
            maxParkedPerPartition: try env.read(Self.maxParkedPerPartition),
            drainTimeout: try env.read(Self.drainTimeout))
        logLevel = try env.logLevel()
        logFormat = try env.logFormat()
        shutdownTimeout = try env.read(Self.shutdownTimeout)
    }
}
