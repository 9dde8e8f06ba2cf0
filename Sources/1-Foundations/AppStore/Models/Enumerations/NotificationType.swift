/// The kind of event an App Store Server Notification V2 reports.
///
/// Entitlement decisions switch on it; Apple adds types over time, which decode as `unknown`. Unknown values decode to
/// ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreservernotifications/notificationtype).
public enum NotificationType: AppStoreStringEnumeration {
    /// Apple: "SUBSCRIBED".
    case subscribed
    /// Apple: "DID_CHANGE_RENEWAL_PREF".
    case didChangeRenewalPref
    /// Apple: "DID_CHANGE_RENEWAL_STATUS".
    case didChangeRenewalStatus
    /// Apple: "OFFER_REDEEMED".
    case offerRedeemed
    /// Apple: "DID_RENEW".
    case didRenew
    /// Apple: "EXPIRED".
    case expired
    /// Apple: "DID_FAIL_TO_RENEW".
    case didFailToRenew
    /// Apple: "GRACE_PERIOD_EXPIRED".
    case gracePeriodExpired
    /// Apple: "PRICE_INCREASE".
    case priceIncrease
    /// Apple: "REFUND".
    case refund
    /// Apple: "REFUND_DECLINED".
    case refundDeclined
    /// Apple: "REFUND_REVERSED".
    case refundReversed
    /// Apple: "CONSUMPTION_REQUEST".
    case consumptionRequest
    /// Apple: "RENEWAL_EXTENDED".
    case renewalExtended
    /// Apple: "RENEWAL_EXTENSION".
    case renewalExtension
    /// Apple: "REVOKE".
    case revoke
    /// Apple: "TEST".
    case test
    /// Apple: "EXTERNAL_PURCHASE_TOKEN".
    case externalPurchaseToken
    /// Apple: "ONE_TIME_CHARGE".
    case oneTimeCharge
    /// Apple: "RESCIND_CONSENT".
    case rescindConsent
    /// Apple: "METADATA_UPDATE".
    case metadataUpdate
    /// Apple: "MIGRATION".
    case migration
    /// Apple: "PRICE_CHANGE".
    case priceChange
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [NotificationType] = [
        .subscribed,
        .didChangeRenewalPref,
        .didChangeRenewalStatus,
        .offerRedeemed,
        .didRenew,
        .expired,
        .didFailToRenew,
        .gracePeriodExpired,
        .priceIncrease,
        .refund,
        .refundDeclined,
        .refundReversed,
        .consumptionRequest,
        .renewalExtended,
        .renewalExtension,
        .revoke,
        .test,
        .externalPurchaseToken,
        .oneTimeCharge,
        .rescindConsent,
        .metadataUpdate,
        .migration,
        .priceChange,
    ]

    public var rawValue: String {
        switch self {
        case .subscribed: "SUBSCRIBED"
        case .didChangeRenewalPref: "DID_CHANGE_RENEWAL_PREF"
        case .didChangeRenewalStatus: "DID_CHANGE_RENEWAL_STATUS"
        case .offerRedeemed: "OFFER_REDEEMED"
        case .didRenew: "DID_RENEW"
        case .expired: "EXPIRED"
        case .didFailToRenew: "DID_FAIL_TO_RENEW"
        case .gracePeriodExpired: "GRACE_PERIOD_EXPIRED"
        case .priceIncrease: "PRICE_INCREASE"
        case .refund: "REFUND"
        case .refundDeclined: "REFUND_DECLINED"
        case .refundReversed: "REFUND_REVERSED"
        case .consumptionRequest: "CONSUMPTION_REQUEST"
        case .renewalExtended: "RENEWAL_EXTENDED"
        case .renewalExtension: "RENEWAL_EXTENSION"
        case .revoke: "REVOKE"
        case .test: "TEST"
        case .externalPurchaseToken: "EXTERNAL_PURCHASE_TOKEN"
        case .oneTimeCharge: "ONE_TIME_CHARGE"
        case .rescindConsent: "RESCIND_CONSENT"
        case .metadataUpdate: "METADATA_UPDATE"
        case .migration: "MIGRATION"
        case .priceChange: "PRICE_CHANGE"
        case .unknown(let rawValue): rawValue
        }
    }
}
