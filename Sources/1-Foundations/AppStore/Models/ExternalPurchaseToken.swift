/// An External Purchase API token event (`EXTERNAL_PURCHASE_TOKEN`).
///
/// It has no environment field: Apple's libraries treat an ``externalPurchaseId`` starting with
/// `SANDBOX` as Sandbox and anything else as Production (see ``derivedEnvironment``).
/// See https://developer.apple.com/documentation/appstoreservernotifications/externalpurchasetoken
public struct ExternalPurchaseToken: Codable, Hashable, Sendable {
    /// The token's identifier.
    public var externalPurchaseId: String?
    /// Creation time in milliseconds since 1970 (an integer, as Apple's libraries keep it).
    public var tokenCreationDate: Int64?
    /// Expiry in milliseconds since 1970; custom-link tokens only.
    public var tokenExpirationDate: Int64?
    /// `SERVICES` or `ACQUISITION`.
    public var tokenType: ExternalPurchaseTokenType?
    /// The app's Apple ID.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?

    public init(
        externalPurchaseId: String? = nil,
        tokenCreationDate: Int64? = nil,
        tokenExpirationDate: Int64? = nil,
        tokenType: ExternalPurchaseTokenType? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil
    ) {
        self.externalPurchaseId = externalPurchaseId
        self.tokenCreationDate = tokenCreationDate
        self.tokenExpirationDate = tokenExpirationDate
        self.tokenType = tokenType
        self.appAppleId = appAppleId
        self.bundleId = bundleId
    }

    /// The environment Apple's libraries derive: Sandbox when the identifier starts with `SANDBOX`.
    public var derivedEnvironment: AppStoreEnvironment {
        (externalPurchaseId ?? "").hasPrefix("SANDBOX") ? .sandbox : .production
    }
}
