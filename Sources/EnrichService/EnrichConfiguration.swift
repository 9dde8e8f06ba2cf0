import AppStore
import AppStoreServerAPI
import EnvironmentSettings
import Foundation
import StageRuntime
import X509

/// What the enrich stage needs besides the runtime's settings, read from the environment at start.
///
/// Every value is checked before anything is consumed: a wrong one stops the process with one line
/// naming the variable (and never the key material), instead of dead-lettering every record later.
public struct EnrichConfiguration: Sendable {
    /// The apps whose data is accepted and looked up (same meaning as verify's `APPSTORE_APPS`).
    public var apps: [AppStoreApp]
    /// Roots trusted for the API's JWS besides Apple Root CA - G3 (the simulator's); Sandbox only.
    public var additionalTrustedRoots: [Certificate]
    /// The API client's settings (credentials, base URL override, timeout, rate limit).
    public var client: AppStoreServerAPIClient.Configuration
    /// Whether records of one batch with the same purchase share one lookup.
    public var coalesce: Bool
    /// How many lookups of one batch run at once.
    public var concurrency: Int
    /// The replay cache and the per-purchase answer cache across batches.
    public var caches: EnrichStage.Caches
    /// Most API answer JWS remembered as verified (0: every JWS verified on every lookup).
    public var verifiedJWSCacheEntries: Int

    /// The variables, for `--help`: name, default, meaning.
    public static let variables: [(name: String, default: String, meaning: String)] = [
        ("APPSTORE_APPS", "(required)", "apps accepted: \(AppListParser.syntax)"),
        ("APPSTORE_TRUSTED_ROOTS", "", "comma-separated DER/PEM roots trusted besides Apple Root CA - G3 for API answers (the simulator's); never for Production"),
        ("APPSTORE_API_CREDENTIALS", "(required)", "bundleId:issuerId:keyId:/path/to/key.p8 (or env:VARIABLE holding the PEM), comma-separated, one per app"),
        ("APPSTORE_API_BASE_URL", "Apple's hosts", "replaces api.storekit(-sandbox).apple.com, e.g. http://127.0.0.1:8090 for appstore-sim"),
        ("APPSTORE_API_TIMEOUT_MS", "15000", "longest one API request may take"),
        ("APPSTORE_API_RATE_SCALE", "0.9", "share of Apple's documented per-endpoint limit to use (Sandbox limits are 10 %); above 1 only against the simulator"),
        ("APPSTORE_API_RATE_BURST_S", "10", "seconds' worth of requests that may be sent at once"),
        ("ENRICH_COALESCE", "on", "records of one batch for the same purchase share one lookup (on or off)"),
        ("ENRICH_CONCURRENCY", "8", "lookups of one batch run at once"),
        ("ENRICH_REPLAY_CACHE_SIZE", "100000", "events remembered as enriched and delivered; a record of one of them (a replayed notification or upload) is dropped before any API call (0: off)"),
        ("ENRICH_LOOKUP_CACHE_TTL_MS", "2000", "how long one purchase's answer serves records of later batches that arrived before it was requested (0: off)"),
        ("ENRICH_LOOKUP_CACHE_SIZE", "10000", "purchases whose answer is kept for ENRICH_LOOKUP_CACHE_TTL_MS"),
        ("ENRICH_VERIFIED_JWS_CACHE_SIZE", "10000", "API answer JWS remembered as verified, byte for byte, so an unchanged history transaction is not verified again (0: off)"),
    ]

    public init(
        apps: [AppStoreApp], additionalTrustedRoots: [Certificate] = [], client: AppStoreServerAPIClient.Configuration,
        coalesce: Bool = true, concurrency: Int = 8, caches: EnrichStage.Caches = EnrichStage.Caches(), verifiedJWSCacheEntries: Int = 10_000
    ) {
        self.apps = apps
        self.additionalTrustedRoots = additionalTrustedRoots
        self.client = client
        self.coalesce = coalesce
        self.concurrency = concurrency
        self.caches = caches
        self.verifiedJWSCacheEntries = verifiedJWSCacheEntries
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        do {
            let trust = try AppStoreTrustSettings.read(apps: env.string("APPSTORE_APPS"), trustedRoots: env.string("APPSTORE_TRUSTED_ROOTS"))
            apps = trust.apps
            additionalTrustedRoots = trust.additionalTrustedRoots
        } catch {
            throw ConfigurationError(variable: error.variable, problem: error.problem)
        }
        let credentials: [AppStoreAPICredentials]
        do {
            credentials = try AppStoreAPICredentials.parseList(try env.required("APPSTORE_API_CREDENTIALS"), environment: env.values)
        } catch let error as AppStoreAPIError {
            throw ConfigurationError(variable: "APPSTORE_API_CREDENTIALS", problem: error.message)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(variable: "APPSTORE_API_CREDENTIALS", problem: "cannot be read")
        }
        let withCredentials = Set(credentials.map(\.bundleID))
        for app in apps where !withCredentials.contains(app.bundleID) {
            throw ConfigurationError(variable: "APPSTORE_API_CREDENTIALS", problem: "has no key for \(app.bundleID), which APPSTORE_APPS lists")
        }
        var baseURL: String?
        if let raw = env.string("APPSTORE_API_BASE_URL") {
            guard let url = URL(string: raw), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ConfigurationError(variable: "APPSTORE_API_BASE_URL", problem: "must be an http(s) URL (got \"\(raw.prefix(80))\")")
            }
            baseURL = raw.hasSuffix("/") ? String(raw.dropLast()) : raw
        }
        let scale = try Self.double(env, "APPSTORE_API_RATE_SCALE", default: 0.9, in: 0.001...1000)
        let burst = try env.int("APPSTORE_API_RATE_BURST_S", default: 10, in: 1...3600)
        client = AppStoreServerAPIClient.Configuration(
            credentials: credentials, baseURLOverride: baseURL,
            requestTimeout: try env.milliseconds("APPSTORE_API_TIMEOUT_MS", default: .seconds(15), in: 100...600_000),
            rateLimits: RateLimitPolicy(scale: scale, burst: .seconds(burst)))
        coalesce = try env.bool("ENRICH_COALESCE", default: true)
        concurrency = try env.int("ENRICH_CONCURRENCY", default: 8, in: 1...256)
        caches = EnrichStage.Caches(
            replayEntries: try env.int("ENRICH_REPLAY_CACHE_SIZE", default: 100_000, in: 0...10_000_000),
            lookupTimeToLive: try env.milliseconds("ENRICH_LOOKUP_CACHE_TTL_MS", default: .milliseconds(2000), in: 0...600_000),
            lookupEntries: try env.int("ENRICH_LOOKUP_CACHE_SIZE", default: 10_000, in: 1...1_000_000))
        verifiedJWSCacheEntries = try env.int("ENRICH_VERIFIED_JWS_CACHE_SIZE", default: 10_000, in: 0...1_000_000)
        do {
            _ = try SignedDataVerifier(configuration: verifierConfiguration)
        } catch {
            throw ConfigurationError(variable: "APPSTORE_APPS", problem: "is not usable: \(error.message)")
        }
    }

    /// The verifier of the API's answers: Apple Root CA - G3 plus the configured roots (Sandbox only),
    /// remembering verified answer JWS so a purchase looked up again costs no signature checks for
    /// its unchanged transactions.
    public var verifierConfiguration: SignedDataVerifier.Configuration {
        SignedDataVerifier.Configuration(
            apps: apps, additionalTrustedRoots: additionalTrustedRoots,
            verifiedTokenCache: VerifiedTokenCachePolicy(isEnabled: verifiedJWSCacheEntries > 0, maximumEntries: verifiedJWSCacheEntries))
    }

    static func double(_ env: EnvironmentReader, _ name: String, default value: Double, in range: ClosedRange<Double>) throws(ConfigurationError) -> Double {
        guard let raw = env.string(name) else { return value }
        guard let parsed = Double(raw), range.contains(parsed) else {
            throw ConfigurationError(variable: name, problem: "must be a number from \(range.lowerBound) to \(range.upperBound) (got \"\(raw.prefix(40))\")")
        }
        return parsed
    }
}
