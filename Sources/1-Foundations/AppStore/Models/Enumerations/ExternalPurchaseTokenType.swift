/// The kind of External Purchase token.
///
/// Documented by Apple but not yet modelled by its libraries. Unknown values decode to ``unknown(_:)`` and are kept.
/// See https://developer.apple.com/documentation/appstoreservernotifications/externalpurchasetoken
public enum ExternalPurchaseTokenType: AppStoreStringEnumeration {
    /// Apple: "SERVICES".
    case services
    /// Apple: "ACQUISITION".
    case acquisition
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [ExternalPurchaseTokenType] = [
        .services,
        .acquisition,
    ]

    public var rawValue: String {
        switch self {
        case .services: "SERVICES"
        case .acquisition: "ACQUISITION"
        case .unknown(let rawValue): rawValue
        }
    }
}
