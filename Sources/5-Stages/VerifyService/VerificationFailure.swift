import AppStore
import ErrorClassification
import StageRuntime

/// A verifier rejection as the stage runtime sees it: the verifier's stable code becomes the
/// dead-letter code, and only an unreachable OCSP responder is worth retrying.
///
/// `AppStoreVerificationError` does not conform to ``ClassifiedError`` itself: the verifier stays
/// free of the runtime's module.
public struct VerificationFailure: ClassifiedError, Hashable, CustomStringConvertible {
    /// The verifier's error, unchanged.
    public let error: AppStoreVerificationError

    public init(_ error: AppStoreVerificationError) {
        self.error = error
    }

    /// The verifier's stable code, e.g. `verification.invalid_signature`, `verification.untrusted_root`.
    public var code: AppStoreVerificationError.Code { error.code }
    public var message: String { error.message }
    /// Only `verification.revocation_check_unavailable` heals by itself; every other rejection is final for these bytes.
    public var isTransient: Bool { error.isRetryable }
    public var description: String { error.description }
}
