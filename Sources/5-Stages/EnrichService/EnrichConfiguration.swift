import AppStore
import AppStoreServerAPI
import EnvironmentSettings
import Foundation
import PipelineMessages

/// What the enrich stage needs besides the runtime's settings, read from the environment at start.
///
/// Every value is checked before anything is consumed: a wrong one stops the process with one line
/// naming the variable (and never the key material), instead of dead-lettering every record later.
public struct EnrichConfiguration: Sendable {
    /// The App Store Server API: apps, trusted roots, the client's settings, the verified-JWS memory.
    public var api: AppStoreAPISettings
    /// Whether records of one batch with the same purchase share one lookup.
    public var coalesce: Bool
    /// How many lookups of one batch run at once.
    public var concurrency: Int
    /// The replay cache and the per-purchase answer cache across batches.
    public var caches: EnrichStage.Caches
    /// How long a record waits for its purchase's history to show (Apple answers 404 `4040010` for
    /// a purchase it has just signed) before it is enriched from its own transaction.
    public var historyWait: Duration
    /// The keys enrich signs each enriched record with (`RECORD_MAC_KEYS_FILE`), for grant to check.
    public var recordKeys: RecordKeys?
    /// The longest a Sandbox lookup waits for its API budget before its record is set aside
    /// (``RateLimitPolicy/sandboxMaximumWait``); zero: Sandbox records wait in their batch.
    public var sandboxBudgetWait: Duration

    public static let coalesceSetting = Setting<Bool>.flag(
        "ENRICH_COALESCE", default: true, shown: "on", meaning: "records of one batch for the same purchase share one lookup (on or off)")
    public static let concurrencySetting = Setting<Int>.int(
        "ENRICH_CONCURRENCY", default: 8, in: 1...256, meaning: "lookups of one batch run at once")
    public static let replayCacheSize = Setting<Int>.int(
        "ENRICH_REPLAY_CACHE_SIZE", default: 100_000, in: 0...10_000_000,
        meaning:
            "events remembered as enriched and delivered; a record of one of them (a replayed notification or upload) is dropped before any API call (0: off)"
    )
    public static let lookupCacheTTL = Setting<Duration>.milliseconds(
        "ENRICH_LOOKUP_CACHE_TTL_MS", default: .milliseconds(2000), in: 0...600_000,
        meaning: "how long one purchase's answer serves records of later batches that arrived before it was requested (0: off)")
    public static let lookupCacheSize = Setting<Int>.int(
        "ENRICH_LOOKUP_CACHE_SIZE", default: 10_000, in: 1...1_000_000, meaning: "purchases whose answer is kept for ENRICH_LOOKUP_CACHE_TTL_MS")
    public static let verifiedJWSCacheSize = Setting<Int>.int(
        "ENRICH_VERIFIED_JWS_CACHE_SIZE", default: 10_000, in: 0...1_000_000,
        meaning: "API answer JWS remembered as verified, byte for byte, so an unchanged history transaction is not verified again (0: off)")

    public static let historyWaitSetting = Setting<Duration>.milliseconds(
        "ENRICH_HISTORY_WAIT_MS", default: .seconds(60), in: 0...3_600_000,
        meaning:
            "how long a record whose purchase's history Apple does not show yet (404 4040010) is retried before it is enriched from its own signed transaction (0: at once)"
    )

    public static let sandboxBudgetWaitSetting = Setting<Duration>.milliseconds(
        "ENRICH_SANDBOX_BUDGET_WAIT_MS", default: .milliseconds(200), in: 0...60_000,
        meaning:
            "longest a Sandbox record waits for its API budget (10 % of Production's) in its batch; past it the record is set aside until its turn and the batch's other records go on (0: it waits in the batch)"
    )

    /// The variables, for `--help`.
    public static let variables =
        AppStoreAPISettings.variables + [
            coalesceSetting.help, concurrencySetting.help, replayCacheSize.help, lookupCacheTTL.help, lookupCacheSize.help,
            verifiedJWSCacheSize.help, historyWaitSetting.help, sandboxBudgetWaitSetting.help, RecordKeys.fileSetting.help,
        ]

    public init(
        api: AppStoreAPISettings, coalesce: Bool = coalesceSetting.defaultValue, concurrency: Int = concurrencySetting.defaultValue,
        caches: EnrichStage.Caches = EnrichStage.Caches(), historyWait: Duration = historyWaitSetting.defaultValue,
        recordKeys: RecordKeys? = nil, sandboxBudgetWait: Duration = sandboxBudgetWaitSetting.defaultValue
    ) {
        self.sandboxBudgetWait = sandboxBudgetWait
        self.api = api
        self.coalesce = coalesce
        self.concurrency = concurrency
        self.caches = caches
        self.historyWait = historyWait
        self.recordKeys = recordKeys
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        let verifiedJWSCacheEntries = try env.read(Self.verifiedJWSCacheSize)
        api = try AppStoreAPISettings(environment: env, verifiedJWSCacheEntries: verifiedJWSCacheEntries)
        coalesce = try env.read(Self.coalesceSetting)
        concurrency = try env.read(Self.concurrencySetting)
        caches = EnrichStage.Caches(
            replayEntries: try env.read(Self.replayCacheSize),
            lookupTimeToLive: try env.read(Self.lookupCacheTTL),
            lookupEntries: try env.read(Self.lookupCacheSize))
        historyWait = try env.read(Self.historyWaitSetting)
        recordKeys = try env.read(RecordKeys.fileSetting)
        sandboxBudgetWait = try env.read(Self.sandboxBudgetWaitSetting)
    }
}
