/// The detail of a notification type (for example `INITIAL_BUY` of `SUBSCRIBED`).
///
/// Absent for many types; the documented `CREATED` and `ACTIVE_TOKEN_REMINDER` are known here although Apple's
/// libraries lack them. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreservernotifications/subtype).
public enum NotificationSubtype: AppStoreStringEnumeration {
    /// Apple: "INITIAL_BUY".
    case initialBuy
    /// Apple: "RESUBSCRIBE".
    case resubscribe
    /// Apple: "DOWNGRADE".
    case downgrade
    /// Apple: "UPGRADE".
    case upgrade
    /// Apple: "AUTO_RENEW_ENABLED".
    case autoRenewEnabled
    /// Apple: "AUTO_RENEW_DISABLED".
    case autoRenewDisabled
    /// Apple: "VOLUNTARY".
    case voluntary
    /// Apple: "BILLING_RETRY".
    case billingRetry
    /// Apple: "PRICE_INCREASE".
    case priceIncrease
    /// Apple: "GRACE_PERIOD".
    case gracePeriod
    /// Apple: "PENDING".
    case pending
    /// Apple: "ACCEPTED".
    case accepted
    /// Apple: "BILLING_RECOVERY".
    case billingRecovery
    /// Apple: "PRODUCT_NOT_FOR_SALE".
    case productNotForSale
    /// Apple: "SUMMARY".
    case summary
    /// Apple: "FAILURE".
    case failure
    /// Apple: "UNREPORTED".
    case unreported
    /// Apple: "CREATED".
    case created
    /// Apple: "ACTIVE_TOKEN_REMINDER".
    case activeTokenReminder
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [NotificationSubtype] = [
        .initialBuy,
        .resubscribe,
        .downgrade,
        .upgrade,
        .autoRenewEnabled,
        .autoRenewDisabled,
        .voluntary,
        .billingRetry,
        .priceIncrease,
        .gracePeriod,
        .pending,
        .accepted,
        .billingRecovery,
        .productNotForSale,
        .summary,
        .failure,
        .unreported,
        .created,
        .activeTokenReminder,
    ]

    public var rawValue: String {
        switch self {
        case .initialBuy: "INITIAL_BUY"
        case .resubscribe: "RESUBSCRIBE"
        case .downgrade: "DOWNGRADE"
        case .upgrade: "UPGRADE"
        case .autoRenewEnabled: "AUTO_RENEW_ENABLED"
        case .autoRenewDisabled: "AUTO_RENEW_DISABLED"
        case .voluntary: "VOLUNTARY"
        case .billingRetry: "BILLING_RETRY"
        case .priceIncrease: "PRICE_INCREASE"
        case .gracePeriod: "GRACE_PERIOD"
        case .pending: "PENDING"
        case .accepted: "ACCEPTED"
        case .billingRecovery: "BILLING_RECOVERY"
        case .productNotForSale: "PRODUCT_NOT_FOR_SALE"
        case .summary: "SUMMARY"
        case .failure: "FAILURE"
        case .unreported: "UNREPORTED"
        case .created: "CREATED"
        case .activeTokenReminder: "ACTIVE_TOKEN_REMINDER"
        case .unknown(let rawValue): rawValue
        }
    }
}
