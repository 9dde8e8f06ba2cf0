/// Whether the customer bought the product or has it through Family Sharing.
///
/// Family-shared access ends with `REVOKE`. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/inappownershiptype).
public enum InAppOwnershipType: AppStoreStringEnumeration {
    /// Apple: "PURCHASED".
    case purchased
    /// Apple: "FAMILY_SHARED".
    case familyShared
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [InAppOwnershipType] = [
        .purchased,
        .familyShared,
    ]

    public var rawValue: String {
        switch self {
        case .purchased: "PURCHASED"
        case .familyShared: "FAMILY_SHARED"
        case .unknown(let rawValue): rawValue
        }
    }
}
