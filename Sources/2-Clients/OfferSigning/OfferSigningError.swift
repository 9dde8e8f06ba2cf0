/// Why an offer signature could not be made: a stable code (`offer.<reason>`, schemas/headers.md)
/// and a sentence that never contains key material.
public struct OfferSigningError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `offer.*` codes of the signers and their configuration.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The key file cannot be read, or holds no P-256 PKCS#8 PEM (`.p8`) key.
        public static let invalidKey = Code(rawValue: "offer.invalid_key")
        /// A field that goes into a signature is empty, too long, or contains a character that
        /// would make Apple's message ambiguous.
        public static let invalidField = Code(rawValue: "offer.invalid_field")
        /// The message or the JWS could not be encoded or signed.
        public static let signingFailed = Code(rawValue: "offer.signing_failed")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
