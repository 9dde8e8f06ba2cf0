/// The status of an auto-renewable subscription as of the notification's `signedDate`.
///
/// Absent for non-subscription products. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/status).
public enum SubscriptionStatus: AppStoreIntegerEnumeration {
    /// Apple: 1.
    case active
    /// Apple: 2.
    case expired
    /// Apple: 3.
    case billingRetry
    /// Apple: 4.
    case billingGracePeriod
    /// Apple: 5.
    case revoked
    /// A value this version of the code does not know, kept verbatim.
    case unknown(Int)

    public static let knownValues: [SubscriptionStatus] = [
        .active,
        .expired,
        .billingRetry,
        .billingGracePeriod,
        .revoked,
    ]

    public var rawValue: Int {
        switch self {
        case .active: 1
        case .expired: 2
        case .billingRetry: 3
        case .billingGracePeriod: 4
        case .revoked: 5
        case .unknown(let rawValue): rawValue
        }
    }
}
