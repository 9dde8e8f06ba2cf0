/// Whether a subscription renews automatically.
///
/// With billing-retry state it decides whether a renewal is still expected. Unknown values decode to ``unknown(_:)``
/// and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/autorenewstatus).
public enum AutoRenewStatus: AppStoreIntegerEnumeration {
    /// Apple: 0.
    case off
    /// Apple: 1.
    case on
    /// A value this version of the code does not know, kept verbatim.
    case unknown(Int)

    public static let knownValues: [AutoRenewStatus] = [
        .off,
        .on,
    ]

    public var rawValue: Int {
        switch self {
        case .off: 0
        case .on: 1
        case .unknown(let rawValue): rawValue
        }
    }
}
