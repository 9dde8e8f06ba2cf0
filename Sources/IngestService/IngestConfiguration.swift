import EnvironmentSettings
import KafkaClient
import Logging
import PipelineRecords
import StageRuntime

/// What ingest reads from its environment at start.
public struct IngestConfiguration: Sendable {
    public var kafka: KafkaClientConfiguration
    /// How app uploads are authenticated (`INGEST_UPLOAD_AUTH`); required, no default.
    public var uploadAuthentication: UploadAuthSettings
    public var rawTopic: String
    public var httpHost: String
    public var httpPort: Int
    /// How long a request waits for the broker's acknowledgement before answering 503.
    public var ackTimeout: Duration
    /// Larger request bodies are refused with 413.
    public var maxBodyBytes: Int
    /// Larger JWS strings are refused with 400.
    public var maxJWSBytes: Int
    public var linger: Duration
    public var logLevel: Logger.Level
    public var logFormat: LogFormat
    public var shutdownTimeout: Duration

    public static let variables: [(name: String, default: String, meaning: String)] =
        EnvironmentReader.commonVariables + [
            ("RAW_TOPIC", Topics.raw, "where accepted bodies are written"),
            ("HTTP_HOST / HTTP_PORT", "0.0.0.0 / 8080", "where the webhook, /health, /ready and /metrics are served"),
            ("INGEST_ACK_TIMEOUT_MS", "5000", "wait for the broker's acknowledgement before answering 503"),
            ("MAX_BODY_BYTES", "131072", "larger bodies get 413"),
            ("MAX_JWS_BYTES", "65536", "larger JWS get 400"),
            ("KAFKA_LINGER_MS", "5", "producer batching delay: larger batches, more throughput, a little latency"),
            ("SHUTDOWN_TIMEOUT_MS", "25000", "graceful shutdown deadline"),
            (
                "INGEST_UPLOAD_AUTH", "(required)",
                "how POST /v1/transactions is authenticated: jwt, hmac, or none (refused unless every app in APPSTORE_APPS is Sandbox-only)"
            ),
            (
                "INGEST_UPLOAD_JWKS", "(jwt: required)",
                "the identity provider's keys: a JWKS file path or an https URL (cached, refetched on an unknown kid)"
            ),
            ("INGEST_UPLOAD_ISSUER", "(jwt: required)", "the token's iss must equal it"),
            ("INGEST_UPLOAD_AUDIENCE", "(jwt: required)", "the token's aud must contain it"),
            ("INGEST_UPLOAD_USER_CLAIM", "sub", "the token claim stored as the upload's userId (the body's userId is ignored)"),
            ("INGEST_UPLOAD_LEEWAY_S", "60", "clock tolerance for exp and nbf"),
            ("INGEST_UPLOAD_JWKS_REFRESH_S", "600", "refetch the JWKS URL (or reread the file) when older than this"),
            ("INGEST_UPLOAD_JWKS_REFETCH_MIN_S", "30", "at most one refetch per this many seconds for tokens naming an unknown key"),
            (
                "INGEST_UPLOAD_HMAC_SECRET_FILE", "(hmac: required)",
                "file holding the shared secret (at least 32 bytes; a trailing newline is dropped)"
            ),
            ("INGEST_UPLOAD_HMAC_WINDOW_S", "300", "X-Upload-Timestamp accepted this far from now, either way"),
            ("APPSTORE_APPS", "(none: required)", "the apps, all Sandbox-only, for which uploads may be open"),
        ]

    /// - Parameter uploadAuthentication: no default, as in the environment: open uploads are a
    ///   decision (``OpenUploadSettings``), never an omission.
    public init(
        kafka: KafkaClientConfiguration, uploadAuthentication: UploadAuthSettings, rawTopic: String = Topics.raw,
        httpHost: String = "127.0.0.1", httpPort: Int = 0,
        ackTimeout: Duration = .seconds(5), maxBodyBytes: Int = 128 << 10, maxJWSBytes: Int = 64 << 10,
        linger: Duration = .milliseconds(5), logLevel: Logger.Level = .info, logFormat: LogFormat = .text,
        shutdownTimeout: Duration = .seconds(25)
    ) {
        self.kafka = kafka
        self.uploadAuthentication = uploadAuthentication
        self.rawTopic = rawTopic
        self.httpHost = httpHost
        self.httpPort = httpPort
        self.ackTimeout = ackTimeout
        self.maxBodyBytes = maxBodyBytes
        self.maxJWSBytes = maxJWSBytes
        self.linger = linger
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.shutdownTimeout = shutdownTimeout
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        self.init(
            kafka: try env.kafkaClient(defaultClientID: "ingest"),
            uploadAuthentication: try UploadAuthSettings.read(env),
            rawTopic: env.string("RAW_TOPIC", default: Topics.raw),
            httpHost: env.string("HTTP_HOST", default: "0.0.0.0"),
            httpPort: try env.int("HTTP_PORT", default: 8080, in: 0...65535),
            ackTimeout: try env.milliseconds("INGEST_ACK_TIMEOUT_MS", default: .seconds(5), in: 50...120_000),
            maxBodyBytes: try env.int("MAX_BODY_BYTES", default: 128 << 10, in: 1024...(64 << 20)),
            maxJWSBytes: try env.int("MAX_JWS_BYTES", default: 64 << 10, in: 1024...(16 << 20)),
            linger: try env.milliseconds("KAFKA_LINGER_MS", default: .milliseconds(5), in: 0...10_000),
            logLevel: try env.logLevel(),
            logFormat: try env.logFormat(),
            shutdownTimeout: try env.milliseconds("SHUTDOWN_TIMEOUT_MS", default: .seconds(25), in: 1000...3_600_000))
    }

    /// The producer ingest writes with: a record not acknowledged within the request's deadline
    /// is failed by librdkafka too, so nothing is written long after the client was told 503.
    public var producer: KafkaProducerConfiguration {
        KafkaProducerConfiguration(client: kafka, deliveryTimeout: ackTimeout, linger: linger)
    }
}
