/// Why `appstorectl inspect` did not print a verified result: bad usage (exit 2) or input that
/// fails verification (exit 1, with the verifier's code).
public struct InspectFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The verifier's codes (`verification.invalid_signature`, `verification.malformed`…) and
    /// ``usage``.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The tool was called wrongly (exit 2).
        public static let usage = Code(rawValue: "ops.usage")
    }

    /// A stable code.
    public let code: Code
    /// A human explanation; never the token.
    public let message: String
    /// True for mistakes in how the tool was called rather than in the token.
    public let isUsage: Bool

    public static func usage(_ message: String) -> InspectFailure {
        InspectFailure(code: .usage, message: message, isUsage: true)
    }

    public static func rejected(_ error: AppStoreVerificationError) -> InspectFailure {
        InspectFailure(code: Code(rawValue: error.code.rawValue), message: error.message, isUsage: false)
    }

    /// The process exit status: 2 for usage, 1 for rejected input.
    public var exitCode: Int32 { isUsage ? 2 : 1 }

    public var description: String { "\(code): \(message)" }
}
