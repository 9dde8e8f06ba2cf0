import AppStore
import AppStoreServerAPI
import EnvironmentSettings
import Foundation

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

    /// The variables, for `--help`: name, default, meaning.
    public static let variables: [(name: String, default: String, meaning: String)] =
        AppStoreAPISettings.variables + [
            ("ENRICH_COALESCE", "on", "records of one batch for the same purchase share one lookup (on or off)"),
            ("ENRICH_CONCURRENCY", "8", "lookups of one batch run at once"),
            (
                "ENRICH_REPLAY_CACHE_SIZE", "100000",
                "events remembered as enriched and delivered; a record of one of them (a replayed notification or upload) is dropped before any API call (0: off)"
            ),
            (
                "ENRICH_LOOKUP_CACHE_TTL_MS", "2000",
                "how long one purchase's answer serves records of later batches that arrived before it was requested (0: off)"
            ),
            ("ENRICH_LOOKUP_CACHE_SIZE", "10000", "purchases whose answer is kept for ENRICH_LOOKUP_CACHE_TTL_MS"),
            (
                "ENRICH_VERIFIED_JWS_CACHE_SIZE", "10000",
                "API answer JWS remembered as verified, byte for byte, so an unchanged history transaction is not verified again (0: off)"
            ),
        ]

    public init(api: AppStoreAPISettings, coalesce: Bool = true, concurrency: Int = 8, caches: EnrichStage.Caches = EnrichStage.Caches()) {
        self.api = api
        self.coalesce = coalesce
        self.concurrency = concurrency
        self.caches = caches
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        let verifiedJWSCacheEntries = try env.int("ENRICH_VERIFIED_JWS_CACHE_SIZE", default: 10_000, in: 0...1_000_000)
        api = try AppStoreAPISettings(environment: env, verifiedJWSCacheEntries: verifiedJWSCacheEntries)
        coalesce = try env.bool("ENRICH_COALESCE", default: true)
        concurrency = try env.int("ENRICH_CONCURRENCY", default: 8, in: 1...256)
        caches = EnrichStage.Caches(
            replayEntries: try env.int("ENRICH_REPLAY_CACHE_SIZE", default: 100_000, in: 0...10_000_000),
            lookupTimeToLive: try env.milliseconds("ENRICH_LOOKUP_CACHE_TTL_MS", default: .milliseconds(2000), in: 0...600_000),
            lookupEntries: try env.int("ENRICH_LOOKUP_CACHE_SIZE", default: 10_000, in: 1...1_000_000))
    }
}
