/// The App Store environment that produced signed data.
///
/// Apple signs Sandbox and Production data with the same chain, so the environment inside the payload is what keeps
/// test purchases from granting real entitlements. Unknown values decode to ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/environment).
public enum AppStoreEnvironment: AppStoreStringEnumeration {
    /// Apple's sandbox (TestFlight, sandbox accounts).
    case sandbox
    /// Real purchases.
    case production
    /// StoreKit Testing in Xcode; not signed by an App Store chain.
    case xcode
    /// Used only by Apple's libraries' unit tests.
    case localTesting
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [AppStoreEnvironment] = [
        .sandbox,
        .production,
        .xcode,
        .localTesting,
    ]

    public var rawValue: String {
        switch self {
        case .sandbox: "Sandbox"
        case .production: "Production"
        case .xcode: "Xcode"
        case .localTesting: "LocalTesting"
        case .unknown(let rawValue): rawValue
        }
    }
}
