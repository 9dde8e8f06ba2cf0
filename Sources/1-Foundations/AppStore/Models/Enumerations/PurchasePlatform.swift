/// The platform on which the customer first bought the app.
///
/// Reported by app transactions. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/storekit/apptransaction/originalplatform).
public enum PurchasePlatform: AppStoreStringEnumeration {
    /// Apple: "iOS".
    case iOS
    /// Apple: "macOS".
    case macOS
    /// Apple: "tvOS".
    case tvOS
    /// Apple: "visionOS".
    case visionOS
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [PurchasePlatform] = [
        .iOS,
        .macOS,
        .tvOS,
        .visionOS,
    ]

    public var rawValue: String {
        switch self {
        case .iOS: "iOS"
        case .macOS: "macOS"
        case .tvOS: "tvOS"
        case .visionOS: "visionOS"
        case .unknown(let rawValue): rawValue
        }
    }
}
