/// Whether the customer consented to a subscription price increase.
///
/// An unconsented increase ends in `EXPIRED/PRICE_INCREASE`. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/priceincreasestatus).
public enum PriceIncreaseStatus: AppStoreIntegerEnumeration {
    /// Apple: 0.
    case customerHasNotResponded
    /// Apple: 1.
    case customerConsentedOrWasNotifiedWithoutNeedingConsent
    /// A value this version of the code does not know, kept verbatim.
    case unknown(Int)

    public static let knownValues: [PriceIncreaseStatus] = [
        .customerHasNotResponded,
        .customerConsentedOrWasNotifiedWithoutNeedingConsent,
    ]

    public var rawValue: Int {
        switch self {
        case .customerHasNotResponded: 0
        case .customerConsentedOrWasNotifiedWithoutNeedingConsent: 1
        case .unknown(let rawValue): rawValue
        }
    }
}
