/// App metadata and the signed app transaction, sent with `RESCIND_CONSENT`.
///
/// See [appData](https://developer.apple.com/documentation/appstoreservernotifications/appdata).
public struct AppData: Codable, Hashable, Sendable {
    /// The app's Apple ID.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// Sandbox or Production.
    public var environment: AppStoreEnvironment?
    /// The app transaction as a compact JWS, verified by the verifier like the notification itself.
    public var signedAppTransactionInfo: String?

    public init(
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedAppTransactionInfo: String? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.environment = environment
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}
