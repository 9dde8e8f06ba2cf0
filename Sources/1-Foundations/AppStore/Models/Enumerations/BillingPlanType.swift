/// How a subscription is billed (for example monthly with a 12-month commitment).
///
/// Needed to read commitment plans correctly. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/billingplantype).
public enum BillingPlanType: AppStoreStringEnumeration {
    /// Apple: "BILLED_UPFRONT".
    case billedUpfront
    /// Apple: "MONTHLY".
    case monthly
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [BillingPlanType] = [
        .billedUpfront,
        .monthly,
    ]

    public var rawValue: String {
        switch self {
        case .billedUpfront: "BILLED_UPFRONT"
        case .monthly: "MONTHLY"
        case .unknown(let rawValue): rawValue
        }
    }
}
