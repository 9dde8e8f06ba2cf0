/// The metadata keys every process logs with, named once: a log query or a JSON log pipeline
/// filters on these, so a key is never spelt two ways. One style: `<area>.<name>`, lower snake
/// case (`kafka.topic`, `appstore.original_transaction_id`); only swift-log's own `error` has no area.
/// Here, below every module that logs, so the Kafka client, the store and the API client use it too.
public enum LogKey {
    /// The stage (`ingest`, `verify`, `enrich`, `grant`) a line comes from.
    public static let stage = "pipeline.stage"

    public static let topic = "kafka.topic"
    public static let partition = "kafka.partition"
    public static let offset = "kafka.offset"
    public static let group = "kafka.group"
    /// The stage's input topic, in its start line.
    public static let inputTopic = "kafka.input"
    public static let partitions = "kafka.partitions"
    /// librdkafka's text for an error it reported.
    public static let kafkaError = "kafka.error"
    /// Why a producer handle was replaced.
    public static let kafkaReason = "kafka.reason"
    /// librdkafka's log facility.
    public static let kafkaFacility = "kafka.facility"
    public static let kafkaCloseTimeout = "kafka.close_timeout_s"

    public static let notificationUUID = "appstore.notification_uuid"
    public static let notificationType = "appstore.notification_type"
    public static let originalTransactionId = "appstore.original_transaction_id"
    public static let transactionId = "appstore.transaction_id"
    /// The customer a purchase belongs to (the `appAccountToken` grant keys entitlements by).
    public static let customerId = "grant.customer_id"
    /// The App Store Server API endpoint (`GET /inApps/v2/history`).
    public static let appStoreEndpoint = "appstore.endpoint"
    /// Production or sandbox, and the bundle ID, of an API call.
    public static let appStoreTarget = "appstore.target"
    /// Apple's numeric `errorCode` of a failed API call.
    public static let appStoreErrorCode = "appstore.error_code"
    public static let appStoreApps = "appstore.apps"
    public static let appStoreRoots = "appstore.roots"
    public static let appStoreChainCache = "appstore.chain_cache"
    /// Whether verify checks revocation with OCSP (`APPSTORE_REVOCATION_CHECK`).
    public static let appStoreRevocationCheck = "appstore.revocation_check"
    public static let appStoreValidationTime = "appstore.validation_time"
    public static let appStoreBaseURL = "appstore.base_url"
    public static let appStoreRateScale = "appstore.rate_scale"
    /// The part of each app's API budget a process's group spends (enrich's replicas, or the jobs).
    public static let appStoreBudgetShare = "appstore.budget_share"

    public static let requestID = "request.id"
    public static let httpPort = "http.port"
    /// Whether Swift tasks run on NIO's event loops (`TASKS_ON_EVENT_LOOPS`).
    public static let tasksOnEventLoops = "process.tasks_on_event_loops"
    /// Whether the process exports traces (OpenTelemetry's variables asked for it).
    public static let tracing = "process.tracing"
    public static let httpStatus = "http.status"
    public static let httpTimeout = "http.timeout"
    public static let uploadAuth = "upload.auth"
    /// Offer signing at start: `off`, or the key ID, issuer and apps (never key material).
    public static let offerSigning = "offer.signing"
    public static let uploadJWKS = "upload.jwks"
    public static let uploadJWKSKeys = "upload.jwks_keys"

    /// The error, as its description (swift-log's `error:` parameter is written under this key too).
    public static let error = "error"
    /// The Swift type of swift-log's `error:` parameter.
    public static let errorType = "error.type"
    /// A stable `<area>.<reason>` error code (`verification.invalid_signature`, `store.unavailable`, …).
    public static let errorCode = "error.code"
    public static let errorMessage = "error.message"
    public static let errorTransient = "error.transient"
    public static let attempt = "retry.attempt"
    public static let retryDelay = "retry.delay_ms"
    public static let retryIn = "retry.in"

    /// The purchase (coalescing key) an enrich lookup was for.
    public static let enrichPurchase = "enrich.purchase"
    public static let enrichLookup = "enrich.lookup"
    public static let enrichHistory = "enrich.history"
    public static let enrichReplayOf = "enrich.replay_of"
    public static let enrichCoalesce = "enrich.coalesce"
    public static let enrichReplayCache = "enrich.replay_cache"
    public static let enrichLookupCacheTTL = "enrich.lookup_cache_ttl"
    public static let enrichSandboxBudgetWait = "enrich.sandbox_budget_wait"
    public static let enrichVerifiedJWSCache = "enrich.verified_jws_cache"

    public static let grantEvent = "grant.event"
    public static let grantOutcome = "grant.outcome"
    public static let grantChanges = "grant.changes"
    public static let grantNote = "grant.note"
    /// Sampled committed events Postgres no longer holds (``RestoreWatch``).
    public static let grantMissingEvents = "grant.missing_events"
    public static let grantProducts = "grant.products"
    public static let grantProductsFile = "grant.products_file"
    public static let postgresTarget = "postgres.target"
    /// How long a temporary client's closing was waited for (``StoreConfiguration``).
    public static let postgresCloseTimeout = "postgres.close_timeout"
    public static let migrationVersion = "migration.version"
    public static let migrationName = "migration.name"
    /// The key ID enriched records are signed with (never the key).
    public static let recordKeyID = "record.key_id"
    public static let migrationsApplied = "migration.applied"

    public static let consumptionApps = "consumption.apps"
    /// The apps whose upload-owned purchases grant stamps Apple's token on (`TOKEN_STAMP_APPS`).
    public static let tokenStampApps = "grant.token_stamp_apps"
    public static let consumptionDelivery = "consumption.delivery"
    public static let consumptionRefundPreference = "consumption.refund_preference"
    /// Why a consumption request was not answered.
    public static let consumptionNote = "consumption.note"

    public static let simStateDirectory = "sim.state_dir"
    /// The OCSP base URL the simulator's certificates name (`SIM_OCSP_BASE_URL`).
    public static let simOCSPBaseURL = "sim.ocsp_base_url"
    public static let simKeyID = "sim.key_id"
    public static let simIssuerID = "sim.issuer_id"
}
