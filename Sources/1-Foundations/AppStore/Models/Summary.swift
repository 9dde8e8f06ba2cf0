/// The result of a mass renewal-date extension, sent as `RENEWAL_EXTENSION/SUMMARY`.
///
/// See [summary](https://developer.apple.com/documentation/appstoreservernotifications/summary).
public struct Summary: Codable, Hashable, Sendable {
    /// Sandbox or Production.
    public var environment: AppStoreEnvironment?
    /// The app's Apple ID.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The extended subscription product.
    public var productId: String?
    /// The identifier the extension request was sent with.
    public var requestIdentifier: String?
    /// Storefronts (ISO 3166-1 alpha-3) the extension applied to.
    public var storefrontCountryCodes: [String]?
    /// Subscriptions extended.
    public var succeededCount: Int64?
    /// Subscriptions that could not be extended.
    public var failedCount: Int64?

    public init(
        environment: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        requestIdentifier: String? = nil,
        storefrontCountryCodes: [String]? = nil,
        succeededCount: Int64? = nil,
        failedCount: Int64? = nil
    ) {
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.productId = productId
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}
