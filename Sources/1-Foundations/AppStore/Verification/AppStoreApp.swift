/// One app a verifier accepts signed data for: its bundle ID, its App Store ID and the environments
/// it may come from.
///
/// One verifier can serve several apps, each in Sandbox, Production or both. Production requires the
/// app Apple ID, exactly as Apple's libraries do, because a Production payload must name this app.
public struct AppStoreApp: Hashable, Sendable {
    /// The bundle identifier the payload must carry.
    public let bundleId: String
    /// The app's Apple ID (App Store Connect "Apple ID"); required when Production is accepted.
    public let appAppleId: Int64?
    /// The environments accepted for this app.
    public let environments: Set<AppStoreEnvironment>

    /// - Throws: ``AppStoreConfigurationError`` when the bundle ID or the environments are empty, or
    ///   Production is accepted without `appAppleId`.
    public init(
        bundleId: String,
        appAppleId: Int64? = nil,
        environments: Set<AppStoreEnvironment>
    ) throws(AppStoreConfigurationError) {
        guard !bundleId.isEmpty else {
            throw AppStoreConfigurationError("an app needs a bundle ID")
        }
        guard !environments.isEmpty else {
            throw AppStoreConfigurationError("app \(bundleId) accepts no environment")
        }
        if environments.contains(.production), appAppleId == nil {
            throw AppStoreConfigurationError("app \(bundleId): appAppleId is required when Production is accepted")
        }
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
    }
}
