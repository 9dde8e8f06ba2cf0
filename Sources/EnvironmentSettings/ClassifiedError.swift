// How an error tells the stage runtime what to do with the record that caused it. Here, below the
// runtime, so the store and the API client can classify their errors without importing it.

/// An error that says what the runtime should do with the record that caused it.
public protocol ClassifiedError: Error {
    /// A stable, machine-readable code for dashboards and dead-letter headers (e.g. `invalid_signature`).
    var code: String { get }
    /// A human sentence for the log and the dead-letter header. No secrets, no payloads.
    var message: String { get }
    /// True when the same record may succeed later (a dependency is down, rate limited…).
    var isTransient: Bool { get }
    /// How long the dependency asked us to wait before trying again, if it said.
    var retryAfter: Duration? { get }
}

extension ClassifiedError {
    public var retryAfter: Duration? { nil }
}

/// A ready-made ``ClassifiedError`` for stages that need no error type of their own.
public struct StageError: ClassifiedError, CustomStringConvertible {
    public let code: String
    public let message: String
    public let isTransient: Bool
    public let retryAfter: Duration?

    public static func permanent(_ code: String, _ message: String) -> StageError {
        StageError(code: code, message: message, isTransient: false, retryAfter: nil)
    }

    public static func transient(_ code: String, _ message: String, retryAfter: Duration? = nil) -> StageError {
        StageError(code: code, message: message, isTransient: true, retryAfter: retryAfter)
    }

    public var description: String { "\(code): \(message)" }
}
