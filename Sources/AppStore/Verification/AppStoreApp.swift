/// One app a verifier accepts signed data for: its bundle ID, its App Store ID and the environments
/// it may come from.
///
/// One verifier can serve several apps, each in Sandbox, Production or both. Production requires the
/// app Apple ID, exactly as Apple's libraries do, because a Production payload must name this app.
public struct AppStoreApp: Hashable, Sendable {
    /// The bundle identifier the payload must carry.
    public let bundleID: String
    /// The app's Apple ID (App Store Connect "Apple ID"); required when Production is accepted.
    public let appAppleID: Int64?
    /// The environments accepted for this app.
    public let environments: Set<AppStoreEnvironment>

    /// - Throws: ``AppStoreConfigurationError`` when the bundle ID or the environments are empty, or
    ///   Production is accepted without `appAppleID`.
    public init(
        bundleID: String,
        appAppleID: Int64? = nil,
        environments: Set<AppStoreEnvironment>
    ) throws(AppStoreConfigurationError) {
        guard !bundleID.isEmpty else {
            throw AppStoreConfigurationError("an app needs a bundle ID")
        }
        guard !environments.isEmpty else {
            throw AppStoreConfigurationError("app \(bundleID) accepts no environment")
        }
        if environments.contains(.production), appAppleID == nil {
            throw AppStoreConfigurationError("app \(bundleID): appAppleID is required when Production is accepted")
        }
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environments = environments
    }
}
