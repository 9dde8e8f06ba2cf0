/// Whether a transaction is a customer purchase or an automatic renewal.
///
/// Distinguishes first purchases from renewals. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/transactionreason).
public enum TransactionReason: AppStoreStringEnumeration {
    /// Apple: "PURCHASE".
    case purchase
    /// Apple: "RENEWAL".
    case renewal
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [TransactionReason] = [
        .purchase,
        .renewal,
    ]

    public var rawValue: String {
        switch self {
        case .purchase: "PURCHASE"
        case .renewal: "RENEWAL"
        case .unknown(let rawValue): rawValue
        }
    }
}
