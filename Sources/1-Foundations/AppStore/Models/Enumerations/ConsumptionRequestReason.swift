/// Why a customer asked for a refund of a consumable (`CONSUMPTION_REQUEST`).
///
/// Kept for the consumption-information answer. Unknown values decode to ``unknown(_:)`` and are kept.
/// See https://developer.apple.com/documentation/appstoreservernotifications/consumptionrequestreason
public enum ConsumptionRequestReason: AppStoreStringEnumeration {
    /// Apple: "UNINTENDED_PURCHASE".
    case unintendedPurchase
    /// Apple: "FULFILLMENT_ISSUE".
    case fulfillmentIssue
    /// Apple: "UNSATISFIED_WITH_PURCHASE".
    case unsatisfiedWithPurchase
    /// Apple: "LEGAL".
    case legal
    /// Apple: "OTHER".
    case other
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [ConsumptionRequestReason] = [
        .unintendedPurchase,
        .fulfillmentIssue,
        .unsatisfiedWithPurchase,
        .legal,
        .other,
    ]

    public var rawValue: String {
        switch self {
        case .unintendedPurchase: "UNINTENDED_PURCHASE"
        case .fulfillmentIssue: "FULFILLMENT_ISSUE"
        case .unsatisfiedWithPurchase: "UNSATISFIED_WITH_PURCHASE"
        case .legal: "LEGAL"
        case .other: "OTHER"
        case .unknown(let rawValue): rawValue
        }
    }
}
