/// Why `appstorectl inspect` did not print a verified result: bad usage (exit 2) or input that
/// fails verification (exit 1, with the verifier's code).
public struct InspectFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable code: the verifier's (`invalid_signature`, `untrusted_root`, `malformed`…) or `usage`.
    public let code: String
    /// A human explanation; never the token.
    public let message: String
    /// True for mistakes in how the tool was called rather than in the token.
    public let isUsage: Bool

    public static func usage(_ message: String) -> InspectFailure {
        InspectFailure(code: "usage", message: message, isUsage: true)
    }

    public static func rejected(_ error: AppStoreVerificationError) -> InspectFailure {
        InspectFailure(code: error.code.rawValue, message: error.message, isUsage: false)
    }

    /// The process exit status: 2 for usage, 1 for rejected input.
    public var exitCode: Int32 { isUsage ? 2 : 1 }

    public var description: String { "\(code): \(message)" }
}
