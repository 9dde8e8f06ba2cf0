import AppStore
import AsyncHTTPClient
import EnvironmentSettings
import Foundation
import Logging
import X509

/// How a process talks to the App Store Server API: the apps whose answers it accepts, the roots
/// trusted for them besides Apple Root CA - G3 (the simulator's; Sandbox only), and the client's
/// credentials, base URL, timeout and rate limits. Read from the `APPSTORE_*` variables by enrich,
/// grant's consumption responder and appstorectl alike, so all three build the verifier and the
/// client the same way (``makeClient(httpClient:logger:)``).
public struct AppStoreAPISettings: Sendable {
    public var apps: [AppStoreApp]
    public var additionalTrustedRoots: [Certificate]
    public var client: AppStoreServerAPIClient.Configuration
    /// Most answer JWS remembered as verified, byte for byte (0: every JWS verified every time).
    public var verifiedJWSCacheEntries: Int
    /// The part of each app's budget kept for appstorectl's jobs (``jobsShare``); enrich spends the rest.
    public var jobsBudgetShare: Double = Self.jobsShare.defaultValue

    /// These settings for the stage: its replicas together spend all but the jobs' part of each
    /// app's budget (each its part, ``RateLimiter/setPart(_:)``).
    public var forEnrich: AppStoreAPISettings { spending(1 - jobsBudgetShare) }

    /// These settings for appstorectl's jobs: the part of each app's budget enrich leaves them.
    public var forJobs: AppStoreAPISettings { spending(jobsBudgetShare) }

    private func spending(_ share: Double) -> AppStoreAPISettings {
        var settings = self
        settings.client.rateLimits.share = min(1, max(0, share))
        return settings
    }

    /// Names key files or variables holding keys, not the keys: the PEM itself is read as a secret.
    public static let credentialsSetting = Setting<String>.required(
        "APPSTORE_API_CREDENTIALS",
        meaning: "bundleId:issuerId:keyId:/path/to/key.p8 (or env:VARIABLE holding the PEM), comma-separated, one per app")
    public static let baseURL = Setting<String?>.optional(
        "APPSTORE_API_BASE_URL", shown: "Apple's hosts",
        meaning: "replaces api.storekit(-sandbox).apple.com, e.g. http://127.0.0.1:8090 for appstore-sim")
    public static let timeout = Setting<Duration>.milliseconds(
        "APPSTORE_API_TIMEOUT_MS", default: .seconds(15), in: 100...600_000, meaning: "longest one API request may take")
    public static let rateScale = Setting<Double>.number(
        "APPSTORE_API_RATE_SCALE", default: 0.9, in: 0.001...1000,
        meaning: "share of Apple's documented per-endpoint limit to use (Sandbox limits are 10 %); above 1 only against the simulator")
    public static let rateBurst = Setting<Int>.int(
        "APPSTORE_API_RATE_BURST_S", default: 10, in: 1...3600, meaning: "seconds' worth of requests that may be sent at once")
    public static let jobsShare = Setting<Double>.number(
        "APPSTORE_API_JOBS_SHARE", default: 0.2, in: 0.01...0.9,
        meaning:
            "part of the API budgets of the endpoints enrich calls kept for appstorectl's jobs (backfill, reconcile, …); enrich's replicas split the rest by the partitions each owns"
    )

    /// The apps a grant-side job opts in with `setting` (comma-separated bundle IDs) and the API
    /// settings it calls Apple with, each app needing a key; nil when `setting` names none (the job is off).
    public static func optedIn(
        _ setting: Setting<String?>, _ env: EnvironmentReader
    ) throws(ConfigurationError) -> (apps: Set<String>, api: AppStoreAPISettings)? {
        let apps = Set(
            (try env.read(setting) ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        guard !apps.isEmpty else { return nil }
        let api = try AppStoreAPISettings(environment: env)
        let withKeys = Set(api.client.credentials.map(\.bundleId))
        for app in apps.sorted() where !withKeys.contains(app) {
            throw ConfigurationError(variable: setting.name, problem: "names \(app), which has no key in APPSTORE_API_CREDENTIALS")
        }
        return (apps, api)
    }

    /// The variables, for `--help`.
    public static let variables = [
        AppStoreTrustSettings.appsSetting.help, AppStoreTrustSettings.trustedRootsSetting.help, credentialsSetting.help, baseURL.help, timeout.help,
        rateScale.help, rateBurst.help, jobsShare.help,
    ]

    public init(
        apps: [AppStoreApp], additionalTrustedRoots: [Certificate] = [], client: AppStoreServerAPIClient.Configuration,
        verifiedJWSCacheEntries: Int = 0
    ) {
        self.apps = apps
        self.additionalTrustedRoots = additionalTrustedRoots
        self.client = client
        self.verifiedJWSCacheEntries = verifiedJWSCacheEntries
    }

    /// Reads and checks every `APPSTORE_*` variable; each problem is one line naming its variable
    /// (never the key material).
    public init(environment env: EnvironmentReader, verifiedJWSCacheEntries: Int = 0) throws(ConfigurationError) {
        self.verifiedJWSCacheEntries = verifiedJWSCacheEntries
        let trust = try AppStoreTrustSettings(environment: env)
        apps = trust.apps
        additionalTrustedRoots = trust.additionalTrustedRoots
        let credentialList = try env.read(Self.credentialsSetting)
        let credentials: [AppStoreAPICredentials]
        do {
            // A key held in a variable (env:NAME) is read through the configuration reader as a secret.
            credentials = try AppStoreAPICredentials.parseList(credentialList) { env.string($0, isSecret: true) }
        } catch let error as AppStoreAPIError {
            throw ConfigurationError(variable: "APPSTORE_API_CREDENTIALS", problem: error.message)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(variable: "APPSTORE_API_CREDENTIALS", problem: "cannot be read")
        }
        let withCredentials = Set(credentials.map(\.bundleId))
        for app in apps where !withCredentials.contains(app.bundleId) {
            throw ConfigurationError(variable: "APPSTORE_API_CREDENTIALS", problem: "has no key for \(app.bundleId), which APPSTORE_APPS lists")
        }
        var baseURL: String?
        if let raw = try env.read(Self.baseURL) {
            guard let url = URL(string: raw), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ConfigurationError(variable: "APPSTORE_API_BASE_URL", problem: "must be an http(s) URL (got \"\(raw.prefix(80))\")")
            }
            // A request token is a bearer credential: over plain HTTP anyone on the path may replay
            // it against Apple for its life, so http:// is only for Sandbox-only deployments (the simulator).
            if url.scheme == "http", let production = apps.first(where: { $0.environments.contains(.production) }) {
                throw ConfigurationError(
                    variable: "APPSTORE_API_BASE_URL",
                    problem:
                        "is http://, which would send \(production.bundleId)'s Production request tokens in clear; use https:// (http:// is for Sandbox-only apps)"
                )
            }
            baseURL = raw.hasSuffix("/") ? String(raw.dropLast()) : raw
        }
        let scale = try env.read(Self.rateScale)
        let burst = try env.read(Self.rateBurst)
        jobsBudgetShare = try env.read(Self.jobsShare)
        client = AppStoreServerAPIClient.Configuration(
            credentials: credentials, baseURLOverride: baseURL,
            requestTimeout: try env.read(Self.timeout),
            rateLimits: RateLimitPolicy(scale: scale, burst: .seconds(burst)))
        try AppStoreTrustSettings.checkAtStart(verifierConfiguration)
    }

    /// The verifier of the API's answers: Apple Root CA - G3 plus the configured roots (Sandbox only),
    /// remembering verified answer JWS when ``verifiedJWSCacheEntries`` is above zero.
    public var verifierConfiguration: SignedDataVerifier.Configuration {
        SignedDataVerifier.Configuration(
            apps: apps, additionalTrustedRoots: additionalTrustedRoots,
            verifiedTokenCache: VerifiedTokenCachePolicy(isEnabled: verifiedJWSCacheEntries > 0, maximumEntries: verifiedJWSCacheEntries))
    }

    /// The API client over `httpClient`, every answer verified by ``verifierConfiguration``.
    public func makeClient(httpClient: HTTPClient, logger: Logger) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(
            configuration: client, httpClient: httpClient, verifier: try SignedDataVerifier(configuration: verifierConfiguration), logger: logger)
    }
}
