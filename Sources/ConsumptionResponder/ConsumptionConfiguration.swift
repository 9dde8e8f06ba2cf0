import AppStore
import AppStoreServerAPI
import AsyncHTTPClient
import EnvironmentSettings
import Foundation
import Logging
import StageRuntime

/// The consumption responder's settings, read at start. It is off unless `CONSUMPTION_APPS` names
/// at least one app; then it needs the App Store Server API settings enrich uses, with a key for
/// every app it answers for.
public struct ConsumptionConfiguration: Sendable {
    public var policy: ConsumptionPolicy
    /// The API client's settings and the verifier's apps (the same variables as enrich).
    public var api: AppStoreAPISettings
    /// How often the responder looks for due requests.
    public var pollInterval: Duration

    /// Refund preferences Apple accepts, and `none`.
    enum Preference: String, CaseIterable {
        case none
        case decline = "DECLINE"
        case grantFull = "GRANT_FULL"
        case grantProrated = "GRANT_PRORATED"
        var value: String? { self == .none ? nil : rawValue }
    }

    public static let variables: [(name: String, default: String, meaning: String)] = [
        (
            "CONSUMPTION_APPS", "(off)",
            "comma-separated bundle IDs that answer Apple's CONSUMPTION_REQUEST (the app obtains the customer's consent); needs the API variables as for enrich"
        ),
        ("CONSUMPTION_SAMPLE_CONTENT", "false", "whether the apps offer a free sample or trial (sampleContentProvided)"),
        ("CONSUMPTION_REFUND_PREFERENCE", "none", "refund preference for a delivered purchase: none, DECLINE, GRANT_FULL or GRANT_PRORATED"),
        ("CONSUMPTION_UNDELIVERED_REFUND_PREFERENCE", "GRANT_FULL", "refund preference when grant never delivered the purchase"),
        ("CONSUMPTION_POLL_MS", "2000", "how often the responder looks for requests to answer"),
    ]

    public init(policy: ConsumptionPolicy, api: AppStoreAPISettings, pollInterval: Duration = .seconds(2)) {
        self.policy = policy
        self.api = api
        self.pollInterval = pollInterval
    }

    /// The API client, answers verified as enrich verifies them.
    public func makeClient(httpClient: HTTPClient, logger: Logger) throws -> AppStoreServerAPIClient {
        try api.makeClient(httpClient: httpClient, logger: logger)
    }

    /// Reads the settings, or nil when `CONSUMPTION_APPS` is unset or empty (the responder is off).
    public static func read(_ env: EnvironmentReader) throws(ConfigurationError) -> ConsumptionConfiguration? {
        let apps = Set(
            (env.string("CONSUMPTION_APPS") ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty })
        guard !apps.isEmpty else { return nil }
        let api = try AppStoreAPISettings(environment: env)
        let withKeys = Set(api.client.credentials.map(\.bundleID))
        for app in apps.sorted() where !withKeys.contains(app) {
            throw ConfigurationError(variable: "CONSUMPTION_APPS", problem: "names \(app), which has no key in APPSTORE_API_CREDENTIALS")
        }
        let delivered = try env.choice("CONSUMPTION_REFUND_PREFERENCE", default: Preference.none)
        let undelivered = try env.choice("CONSUMPTION_UNDELIVERED_REFUND_PREFERENCE", default: Preference.grantFull)
        return ConsumptionConfiguration(
            policy: ConsumptionPolicy(
                apps: apps, sampleContentProvided: try env.bool("CONSUMPTION_SAMPLE_CONTENT", default: false),
                deliveredRefundPreference: delivered.value, undeliveredRefundPreference: undelivered.value),
            api: api, pollInterval: try env.milliseconds("CONSUMPTION_POLL_MS", default: .seconds(2), in: 10...600_000))
    }
}
