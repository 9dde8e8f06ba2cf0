/// The kind of subscription offer applied to a transaction or renewal.
///
/// Part of the price the customer paid. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/offertype).
public enum OfferType: AppStoreIntegerEnumeration {
    /// Apple: 1.
    case introductoryOffer
    /// Apple: 2.
    case promotionalOffer
    /// Apple: 3.
    case offerCode
    /// Apple: 4.
    case winBackOffer
    /// A value this version of the code does not know, kept verbatim.
    case unknown(Int)

    public static let knownValues: [OfferType] = [
        .introductoryOffer,
        .promotionalOffer,
        .offerCode,
        .winBackOffer,
    ]

    public var rawValue: Int {
        switch self {
        case .introductoryOffer: 1
        case .promotionalOffer: 2
        case .offerCode: 3
        case .winBackOffer: 4
        case .unknown(let rawValue): rawValue
        }
    }
}
