/// Why a subscription expired.
///
/// Used to explain lost access and to target win-back offers. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/expirationintent).
public enum ExpirationIntent: AppStoreIntegerEnumeration {
    /// Apple: 1.
    case customerCancelled
    /// Apple: 2.
    case billingError
    /// Apple: 3.
    case customerDidNotConsentToPriceIncrease
    /// Apple: 4.
    case productNotAvailable
    /// Apple: 5.
    case other
    /// A value this version of the code does not know, kept verbatim.
    case unknown(Int)

    public static let knownValues: [ExpirationIntent] = [
        .customerCancelled,
        .billingError,
        .customerDidNotConsentToPriceIncrease,
        .productNotAvailable,
        .other,
    ]

    public var rawValue: Int {
        switch self {
        case .customerCancelled: 1
        case .billingError: 2
        case .customerDidNotConsentToPriceIncrease: 3
        case .productNotAvailable: 4
        case .other: 5
        case .unknown(let rawValue): rawValue
        }
    }
}
