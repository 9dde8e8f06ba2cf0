/// The payment mode of a subscription offer.
///
/// Part of the price the customer paid. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/offerdiscounttype).
public enum OfferDiscountType: AppStoreStringEnumeration {
    /// Apple: "FREE_TRIAL".
    case freeTrial
    /// Apple: "PAY_AS_YOU_GO".
    case payAsYouGo
    /// Apple: "PAY_UP_FRONT".
    case payUpFront
    /// Apple: "ONE_TIME".
    case oneTime
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [OfferDiscountType] = [
        .freeTrial,
        .payAsYouGo,
        .payUpFront,
        .oneTime,
    ]

    public var rawValue: String {
        switch self {
        case .freeTrial: "FREE_TRIAL"
        case .payAsYouGo: "PAY_AS_YOU_GO"
        case .payUpFront: "PAY_UP_FRONT"
        case .oneTime: "ONE_TIME"
        case .unknown(let rawValue): rawValue
        }
    }
}
