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
    enum Preference: String, CaseIterable, Sendable {
        case none
        case decline = "DECLINE"
        case grantFull = "GRANT_FULL"
        case grantProrated = "GRANT_PRORATED"
        var value: String? { self == .none ? nil : rawValue }
    }

    static let appsSetting = Setting<String?>.optional(
        "CONSUMPTION_APPS", shown: "(off)",
        meaning:
            "comma-separated bundle IDs that answer Apple's CONSUMPTION_REQUEST (the app obtains the customer's consent); needs the API variables as for enrich"
    )
    static let sampleContent = Setting<Bool>.flag(
        "CONSUMPTION_SAMPLE_CONTENT", default: false, meaning: "whether the apps offer a free sample or trial (sampleContentProvided)")
    static let refundPreference = Setting<Preference>.choice(
        "CONSUMPTION_REFUND_PREFERENCE", default: .none,
        meaning: "refund preference for a delivered purchase: none, DECLINE, GRANT_FULL or GRANT_PRORATED")
    static let undeliveredRefundPreference = Setting<Preference>.choice(
        "CONSUMPTION_UNDELIVERED_REFUND_PREFERENCE", default: .grantFull, meaning: "refund preference when grant never delivered the purchase")
    static let poll = Setting<Duration>.milliseconds(
        "CONSUMPTION_POLL_MS", default: .seconds(2), in: 10...600_000, meaning: "how often the responder looks for requests to answer")

    /// The variables, for `--help`.
    public static let variables = [
        appsSetting.help, sampleContent.help, refundPreference.help, undeliveredRefundPreference.help, poll.help,
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
        guard let (apps, api) = try AppStoreAPISettings.optedIn(Self.appsSetting, env) else { return nil }
        let delivered = try env.read(Self.refundPreference)
        let undelivered = try env.read(Self.undeliveredRefundPreference)
        return ConsumptionConfiguration(
            policy: ConsumptionPolicy(
                apps: apps, sampleContentProvided: try env.read(Self.sampleContent),
                deliveredRefundPreference: delivered.value, undeliveredRefundPreference: undelivered.value),
            api: api, pollInterval: try env.read(Self.poll))
    }
}
