/// Why Apple refunded or revoked a transaction.
///
/// Present with `revocationDate`. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/revocationreason).
public enum RevocationReason: AppStoreIntegerEnumeration {
    /// Apple: 0.
    case refundedForOtherReason
    /// Apple: 1.
    case refundedDueToIssue
    /// A value this version of the code does not know, kept verbatim.
    case unknown(Int)

    public static let knownValues: [RevocationReason] = [
        .refundedForOtherReason,
        .refundedDueToIssue,
    ]

    public var rawValue: Int {
        switch self {
        case .refundedForOtherReason: 0
        case .refundedDueToIssue: 1
        case .unknown(let rawValue): rawValue
        }
    }
}
