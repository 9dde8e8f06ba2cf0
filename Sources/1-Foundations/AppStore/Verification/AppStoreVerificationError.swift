/// Why signed App Store data was rejected.
///
/// The ``code`` is a stable string (safe for metrics labels, DLQ headers and alerting); the
/// ``message`` explains the case for a human and never contains the JWS or other secrets. Only
/// ``isRetryable`` errors can heal by themselves (an OCSP responder that could not be reached); every
/// other error is permanent for the same input.
public struct AppStoreVerificationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable, machine-readable reason.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not a compact JWS, bad base64url, not JSON, too large, or a payload that does not decode.
        public static let malformed = Code(rawValue: "verification.malformed")
        /// The header's `alg` is not `ES256`.
        public static let unsupportedAlgorithm = Code(rawValue: "verification.unsupported_algorithm")
        /// The header's `x5c` is missing or does not hold exactly three certificates.
        public static let invalidChainLength = Code(rawValue: "verification.invalid_chain_length")
        /// An `x5c` entry is not a base64 DER certificate, or the leaf key is not P-256.
        public static let invalidCertificate = Code(rawValue: "verification.invalid_certificate")
        /// No chain from the leaf through the intermediate reaches a trusted root (or the root may not
        /// be used for this environment).
        public static let untrustedRoot = Code(rawValue: "verification.untrusted_root")
        /// A chain was found but breaks RFC 5280 or Apple's chain rules.
        public static let invalidChain = Code(rawValue: "verification.invalid_chain")
        /// The leaf or intermediate lacks Apple's marker extension.
        public static let missingMarkerExtension = Code(rawValue: "verification.missing_marker_extension")
        /// A certificate had expired at the validation time.
        public static let certificateExpired = Code(rawValue: "verification.certificate_expired")
        /// A certificate was not yet valid at the validation time.
        public static let certificateNotYetValid = Code(rawValue: "verification.certificate_not_yet_valid")
        /// The ES256 signature does not match the leaf key.
        public static let invalidSignature = Code(rawValue: "verification.invalid_signature")
        /// The bundle identifier is not one the verifier serves.
        public static let wrongBundleId = Code(rawValue: "verification.wrong_bundle_id")
        /// The app Apple ID differs from the configured one (checked in Production).
        public static let wrongAppAppleId = Code(rawValue: "verification.wrong_app_apple_id")
        /// The environment is missing or not configured for the app.
        public static let wrongEnvironment = Code(rawValue: "verification.wrong_environment")
        /// The payload is a different kind of signed data than the caller asked for.
        public static let unexpectedKind = Code(rawValue: "verification.unexpected_kind")
        /// OCSP reports a certificate of the chain as revoked.
        public static let revoked = Code(rawValue: "verification.revoked")
        /// OCSP answered, but the answer could not be used (bad signature, stale, unknown status).
        public static let revocationCheckFailed = Code(rawValue: "verification.revocation_check_failed")
        /// The OCSP responder could not be reached; retry later.
        public static let revocationCheckUnavailable = Code(rawValue: "verification.revocation_check_unavailable")
    }

    /// The stable reason.
    public var code: Code
    /// A human explanation without secrets.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether the same input may verify later (only when revocation status could not be fetched).
    public var isRetryable: Bool { code == .revocationCheckUnavailable }

    public var description: String { "\(code.rawValue): \(message)" }
}
