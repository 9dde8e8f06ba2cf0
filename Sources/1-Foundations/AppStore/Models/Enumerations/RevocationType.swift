/// How a transaction was revoked.
///
/// A prorated refund or a family revoke ends access differently from a full refund. Unknown values decode to
/// ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/revocationtype).
public enum RevocationType: AppStoreStringEnumeration {
    /// Apple: "REFUND_FULL".
    case refundFull
    /// Apple: "REFUND_PRORATED".
    case refundProrated
    /// Apple: "FAMILY_REVOKE".
    case familyRevoke
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [RevocationType] = [
        .refundFull,
        .refundProrated,
        .familyRevoke,
    ]

    public var rawValue: String {
        switch self {
        case .refundFull: "REFUND_FULL"
        case .refundProrated: "REFUND_PRORATED"
        case .familyRevoke: "FAMILY_REVOKE"
        case .unknown(let rawValue): rawValue
        }
    }
}
