import Foundation

/// The decoded payload of an App Store Server Notification V2.
///
/// Every field is optional because Apple omits fields per type. Exactly one of ``data``, ``summary``,
/// ``externalPurchaseToken`` and ``appData`` is present.
/// See https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload
public struct ResponseBodyV2DecodedPayload: Codable, Hashable, Sendable {
    /// What happened.
    public var notificationType: NotificationType?
    /// Detail of ``notificationType``; absent for many types.
    public var subtype: NotificationSubtype?
    /// Identical across Apple's retries of one notification: the deduplication key.
    public var notificationUUID: String?
    /// App, environment and the signed transaction / renewal info; most notification types.
    public var data: NotificationData?
    /// Result of a mass renewal-date extension (`RENEWAL_EXTENSION/SUMMARY`).
    public var summary: Summary?
    /// External Purchase API token (`EXTERNAL_PURCHASE_TOKEN`).
    public var externalPurchaseToken: ExternalPurchaseToken?
    /// App data with the signed app transaction (`RESCIND_CONSENT`).
    public var appData: AppData?
    /// Notification format version, `"2.0"`.
    public var version: String?
    /// When Apple signed the notification.
    public var signedDate: Date?

    public init(
        notificationType: NotificationType? = nil,
        subtype: NotificationSubtype? = nil,
        notificationUUID: String? = nil,
        data: NotificationData? = nil,
        summary: Summary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: AppData? = nil,
        version: String? = nil,
        signedDate: Date? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.appData = appData
        self.version = version
        self.signedDate = signedDate
    }
}
