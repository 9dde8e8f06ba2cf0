import AppStore
import EnvironmentSettings
import StageRuntime

/// A verifier rejection as the stage runtime sees it: the verifier's stable code becomes the
/// dead-letter code, and only an unreachable OCSP responder is worth retrying.
///
/// `AppStoreVerificationError` cannot conform to ``ClassifiedError`` itself: its `code` is a typed
/// value, where the runtime wants the raw string.
public struct VerificationFailure: ClassifiedError, Hashable, CustomStringConvertible {
    /// The verifier's error, unchanged.
    public let error: AppStoreVerificationError

    public init(_ error: AppStoreVerificationError) {
        self.error = error
    }

    /// The verifier's stable code, e.g. `invalid_signature`, `untrusted_root`, `wrong_bundle_id`.
    public var code: String { error.code.rawValue }
    public var message: String { error.message }
    /// Only `revocation_check_unavailable` heals by itself; every other rejection is final for these bytes.
    public var isTransient: Bool { error.isRetryable }
    public var description: String { error.description }
}
