/// The app metadata and signed purchase data of a notification.
///
/// See [data](https://developer.apple.com/documentation/appstoreservernotifications/data).
public struct NotificationData: Codable, Hashable, Sendable {
    /// Sandbox or Production.
    public var environment: AppStoreEnvironment?
    /// The app's Apple ID; absent in Sandbox `TEST` notifications.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The build number of the app (`CFBundleVersion`).
    public var bundleVersion: String?
    /// The transaction as a compact JWS, verified by the verifier like the notification itself.
    public var signedTransactionInfo: String?
    /// The renewal info as a compact JWS; only for auto-renewable subscriptions.
    public var signedRenewalInfo: String?
    /// Subscription status as of the notification's `signedDate`; absent for other products.
    public var status: SubscriptionStatus?
    /// Why the customer requested a refund; only `CONSUMPTION_REQUEST`.
    public var consumptionRequestReason: ConsumptionRequestReason?

    public init(
        environment: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        bundleVersion: String? = nil,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        status: SubscriptionStatus? = nil,
        consumptionRequestReason: ConsumptionRequestReason? = nil
    ) {
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }
}
