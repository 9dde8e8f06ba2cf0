import AppStore
import EnvironmentSettings
import KafkaClient
import Logging
import OfferSigning
import PipelineRecords
import StageRuntime
import X509

/// What ingest reads from its environment at start.
public struct IngestConfiguration: Sendable {
    public var kafka: KafkaClientConfiguration
    /// How app uploads are authenticated (`INGEST_UPLOAD_AUTH`); required, no default.
    public var uploadAuthentication: UploadAuthSettings
    /// The key `POST /v1/offers/signature` signs with; nil (the default) serves no such route.
    public var offerSigning: OfferSigningSettings?
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
    public var compression: KafkaCompression
    public var logLevel: Logger.Level
    public var logFormat: LogFormat
    public var shutdownTimeout: Duration
    /// A connection with no request in progress for this long is closed: a client cannot hold
    /// connections open for free.
    public var idleTimeout: Duration
    /// Uploads one authenticated user regains per minute (0: no limit), and may make at once.
    public var userUploadsPerMinute: Int
    /// The largest `signedTransaction` an app may upload.
    public var maxUploadJWSBytes: Int
    public var userUploadBurst: Int
    /// The look at an upload's certificate chain before it is written (``ChainPrecheck``); the
    /// executable always has one (Apple Root CA - G3 and `APPSTORE_TRUSTED_ROOTS`), nil skips it.
    public var uploadPrecheck: ChainPrecheck?

    public static let rawTopicSetting = Setting<String>.text("RAW_TOPIC", default: Topics.raw, meaning: "where accepted bodies are written")
    public static let httpHostSetting = Setting<String>.text(
        "HTTP_HOST", default: "0.0.0.0", meaning: "where the webhook, /health, /ready and /metrics are served")
    public static let httpPortSetting = Setting<Int>.int("HTTP_PORT", default: 8080, in: 0...65535, meaning: "the port of HTTP_HOST")
    public static let ackTimeoutSetting = Setting<Duration>.milliseconds(
        "INGEST_ACK_TIMEOUT_MS", default: .seconds(5), in: 50...120_000, meaning: "wait for the broker's acknowledgement before answering 503")
    public static let maxBodyBytesSetting = Setting<Int>.int(
        "MAX_BODY_BYTES", default: 128 << 10, in: 1024...(64 << 20), meaning: "larger bodies get 413")
    public static let maxJWSBytesSetting = Setting<Int>.int(
        "MAX_JWS_BYTES", default: 64 << 10, in: 1024...(16 << 20), meaning: "larger JWS get 400")
    /// A StoreKit 2 transaction is about 5 KiB (its certificate chain most of it); a notification
    /// nests two of them, hence MAX_JWS_BYTES's larger default.
    public static let maxUploadJWSBytesSetting = Setting<Int>.int(
        "MAX_UPLOAD_JWS_BYTES", default: 16 << 10, in: 1024...(16 << 20), meaning: "an app's uploaded signedTransaction larger than this gets 400")
    /// Longer than the gateway's keep-alive to ingest (nginx's upstream `keepalive_timeout`, 60 s), so
    /// the gateway, not ingest, ends an idle pooled connection and never sends on one ingest closed.
    public static let idleTimeoutSetting = Setting<Duration>.milliseconds(
        "INGEST_IDLE_TIMEOUT_MS", default: .seconds(75), in: 1000...3_600_000,
        meaning: "a connection with no request in progress for this long is closed")
    public static let userUploadsPerMinuteSetting = Setting<Int>.int(
        "INGEST_USER_UPLOADS_PER_MINUTE", default: 60, in: 0...1_000_000,
        meaning:
            "uploads (transactions and receipts) one authenticated user regains per minute, per ingest process; more get 429 with Retry-After; 0: no limit"
    )
    public static let userUploadBurstSetting = Setting<Int>.int(
        "INGEST_USER_UPLOAD_BURST", default: 120, in: 1...1_000_000,
        meaning: "uploads one authenticated user may make at once (a restore of a long history) before the per-minute rate applies")
    public static let lingerSetting = Setting<Duration>.milliseconds(
        "KAFKA_LINGER_MS", default: .milliseconds(5), in: 0...10_000,
        meaning: "producer batching delay: larger batches, more throughput, a little latency")

    /// The variables, for `--help`.
    public static let variables =
        CommonSettings.variables(clientID: "ingest") + [
            rawTopicSetting.help, httpHostSetting.help, httpPortSetting.help, ackTimeoutSetting.help, maxBodyBytesSetting.help,
            maxJWSBytesSetting.help, maxUploadJWSBytesSetting.help, idleTimeoutSetting.help, userUploadsPerMinuteSetting.help,
            userUploadBurstSetting.help, lingerSetting.help, StageConfiguration.compression.help,
            StageConfiguration.shutdownTimeout.help,
            AppStoreTrustSettings.trustedRootsSetting.help,
        ] + UploadAuthSettings.variables + OfferSigningSettings.variables

    /// - Parameter uploadAuthentication: no default, as in the environment: open uploads are a
    ///   decision (``OpenUploadSettings``), never an omission.
    public init(
        kafka: KafkaClientConfiguration, uploadAuthentication: UploadAuthSettings, rawTopic: String = rawTopicSetting.defaultValue,
        httpHost: String = "127.0.0.1", httpPort: Int = 0,
        ackTimeout: Duration = ackTimeoutSetting.defaultValue, maxBodyBytes: Int = maxBodyBytesSetting.defaultValue,
        maxJWSBytes: Int = maxJWSBytesSetting.defaultValue,
        linger: Duration = lingerSetting.defaultValue, compression: KafkaCompression = StageConfiguration.compression.defaultValue,
        logLevel: Logger.Level = .info, logFormat: LogFormat = .text,
        shutdownTimeout: Duration = StageConfiguration.shutdownTimeout.defaultValue, offerSigning: OfferSigningSettings? = nil,
        idleTimeout: Duration = idleTimeoutSetting.defaultValue, userUploadsPerMinute: Int = userUploadsPerMinuteSetting.defaultValue,
        userUploadBurst: Int = userUploadBurstSetting.defaultValue, maxUploadJWSBytes: Int = maxUploadJWSBytesSetting.defaultValue,
        uploadPrecheck: ChainPrecheck? = nil
    ) {
        self.uploadPrecheck = uploadPrecheck
        self.idleTimeout = idleTimeout
        self.userUploadsPerMinute = userUploadsPerMinute
        self.userUploadBurst = userUploadBurst
        self.maxUploadJWSBytes = maxUploadJWSBytes
        self.kafka = kafka
        self.uploadAuthentication = uploadAuthentication
        self.offerSigning = offerSigning
        self.rawTopic = rawTopic
        self.httpHost = httpHost
        self.httpPort = httpPort
        self.ackTimeout = ackTimeout
        self.maxBodyBytes = maxBodyBytes
        self.maxJWSBytes = maxJWSBytes
        self.linger = linger
        self.compression = compression
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.shutdownTimeout = shutdownTimeout
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        let uploads = try UploadAuthSettings.read(env)
        let offerSigning = try OfferSigningSettings.read(env)
        if offerSigning != nil, uploads.mode == .none {
            // A signature names the caller's customer: without a credential there is no caller.
            throw ConfigurationError(
                variable: OfferSigningSettings.keyFile.name,
                problem: "is set, but INGEST_UPLOAD_AUTH=none: offer signatures need an authenticated user (jwt or hmac)")
        }
        self.init(
            kafka: try env.kafkaClient(defaultClientID: "ingest"),
            uploadAuthentication: uploads,
            rawTopic: try env.read(Self.rawTopicSetting),
            httpHost: try env.read(Self.httpHostSetting),
            httpPort: try env.read(Self.httpPortSetting),
            ackTimeout: try env.read(Self.ackTimeoutSetting),
            maxBodyBytes: try env.read(Self.maxBodyBytesSetting),
            maxJWSBytes: try env.read(Self.maxJWSBytesSetting),
            linger: try env.read(Self.lingerSetting),
            compression: try env.read(StageConfiguration.compression),
            logLevel: try env.logLevel(),
            logFormat: try env.logFormat(),
            shutdownTimeout: try env.read(StageConfiguration.shutdownTimeout),
            offerSigning: offerSigning,
            idleTimeout: try env.read(Self.idleTimeoutSetting),
            userUploadsPerMinute: try env.read(Self.userUploadsPerMinuteSetting),
            userUploadBurst: try env.read(Self.userUploadBurstSetting),
            maxUploadJWSBytes: try env.read(Self.maxUploadJWSBytesSetting),
            uploadPrecheck: ChainPrecheck(trustedRoots: try Self.trustedRoots(env)))
    }

    /// The roots verify trusts besides Apple's (`APPSTORE_TRUSTED_ROOTS`), for the upload pre-check:
    /// ingest must trust the same ones, or it refuses uploads verify would accept.
    static func trustedRoots(_ env: EnvironmentReader) throws(ConfigurationError) -> [Certificate] {
        let value = try env.read(AppStoreTrustSettings.trustedRootsSetting)
        do {
            return try AppStoreTrustSettings.readRoots(value)
        } catch {
            throw ConfigurationError(variable: error.variable, problem: error.problem)
        }
    }

    /// The producer ingest writes with: a record not acknowledged within the request's deadline
    /// is failed by librdkafka too, so nothing is written long after the client was told 503.
    public var producer: KafkaProducerConfiguration {
        KafkaProducerConfiguration(client: kafka, deliveryTimeout: ackTimeout, linger: linger, compression: compression)
    }
}
