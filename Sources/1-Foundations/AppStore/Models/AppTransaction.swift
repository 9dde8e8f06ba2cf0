import Foundation

/// A decoded, verified app transaction: proof that a customer obtained the app.
///
/// Its environment is ``receiptType``, and ``receiptCreationDate`` plays the role of the signed date.
/// See https://developer.apple.com/documentation/appstoreserverapi/jwsapptransactiondecodedpayload
public struct AppTransaction: Codable, Hashable, Sendable {
    /// The environment: Sandbox, Production or Xcode.
    public var receiptType: AppStoreEnvironment?
    /// The app's Apple ID.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The app version the transaction refers to.
    public var applicationVersion: String?
    /// The App Store version identifier.
    public var versionExternalIdentifier: Int64?
    /// When the App Store created this app transaction; its signed date.
    public var receiptCreationDate: Date?
    /// When the customer first obtained the app.
    public var originalPurchaseDate: Date?
    /// The app version the customer first obtained.
    public var originalApplicationVersion: String?
    /// Device verification value (base64).
    public var deviceVerification: String?
    /// Nonce used for ``deviceVerification``.
    public var deviceVerificationNonce: UUID?
    /// When the customer pre-ordered the app, if they did.
    public var preorderDate: Date?
    /// The app download's transaction identifier.
    public var appTransactionId: String?
    /// Platform of the first purchase.
    public var originalPlatform: PurchasePlatform?

    public init(
        receiptType: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        versionExternalIdentifier: Int64? = nil,
        receiptCreationDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        originalApplicationVersion: String? = nil,
        deviceVerification: String? = nil,
        deviceVerificationNonce: UUID? = nil,
        preorderDate: Date? = nil,
        appTransactionId: String? = nil,
        originalPlatform: PurchasePlatform? = nil
    ) {
        self.receiptType = receiptType
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.versionExternalIdentifier = versionExternalIdentifier
        self.receiptCreationDate = receiptCreationDate
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
        self.deviceVerification = deviceVerification
        self.deviceVerificationNonce = deviceVerificationNonce
        self.preorderDate = preorderDate
        self.appTransactionId = appTransactionId
        self.originalPlatform = originalPlatform
    }
}
