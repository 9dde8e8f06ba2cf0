import AppStoreServerAPI
import AsyncHTTPClient
import EnvironmentSettings
import Foundation
import Logging

/// The token stamper's settings, read at start. Off unless `TOKEN_STAMP_APPS` names at least one
/// app; then it needs the App Store Server API settings enrich uses, with a key for every such app.
public struct TokenStampConfiguration: Sendable {
    /// The apps whose upload-owned purchases get the customer's token stamped.
    public var apps: Set<String>
    public var api: AppStoreAPISettings
    public var pollInterval: Duration

    static let appsSetting = Setting<String?>.optional(
        "TOKEN_STAMP_APPS", shown: "(off)",
        meaning:
            "comma-separated bundle IDs whose purchases an authenticated upload or receipt gave to a customer get that customer's appAccountToken stamped at Apple (Set App Account Token), so Apple's later notifications name them; needs the API variables as for enrich"
    )
    static let poll = Setting<Duration>.milliseconds(
        "TOKEN_STAMP_POLL_MS", default: .seconds(2), in: 10...600_000, meaning: "how often grant looks for purchases to stamp")

    /// The variables, for `--help`.
    public static let variables = [appsSetting.help, poll.help]

    public init(apps: Set<String>, api: AppStoreAPISettings, pollInterval: Duration = .seconds(2)) {
        self.apps = apps
        self.api = api
        self.pollInterval = pollInterval
    }

    /// Reads the settings, or nil when `TOKEN_STAMP_APPS` is unset or empty (the stamper is off).
    public static func read(_ env: EnvironmentReader) throws(ConfigurationError) -> TokenStampConfiguration? {
        guard let (apps, api) = try AppStoreAPISettings.optedIn(Self.appsSetting, env) else { return nil }
        return TokenStampConfiguration(apps: apps, api: api, pollInterval: try env.read(Self.poll))
    }
}
