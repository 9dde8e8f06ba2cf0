// How an error tells the stage runtime what to do with the record that caused it. Here, below the
// runtime, so the store and the API client can classify their errors without importing it.

/// An error that says what the runtime should do with the record that caused it.
public protocol ClassifiedError: Error {
    /// The error's typed code; its raw value (`<area>.<reason>`, schemas/headers.md) is what
    /// dashboards, logs and dead-letter headers carry.
    associatedtype Code: RawRepresentable<String>, Sendable
    /// A stable, machine-readable code (e.g. `verification.invalid_signature`).
    var code: Code { get }
    /// A human sentence for the log and the dead-letter header. No secrets, no payloads.
    var message: String { get }
    /// True when the same record may succeed later (a dependency is down, rate limited…).
    var isTransient: Bool { get }
    /// How long the dependency asked us to wait before trying again, if it said.
    var retryAfter: Duration? { get }
    /// True when the record is not failing but must wait for something only it, or records like
    /// it, need (a Sandbox API budget; Apple's history to show its purchase): the runtime sets it
    /// aside until ``retryAfter`` at once, the rest of its partition going on, and never counts the
    /// wait as an attempt. The stage bounds the wait itself.
    var isDeferral: Bool { get }
}

extension ClassifiedError {
    public var retryAfter: Duration? { nil }
    public var isDeferral: Bool { false }
}

/// A ready-made ``ClassifiedError`` for stages that need no error type of their own.
public struct StageError: ClassifiedError, CustomStringConvertible {
    /// The codes the runtime and the stages raise themselves.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The record's body is not what its topic's schema promises (not JSON, a field missing).
        public static let malformedRecord = Code(rawValue: "record.malformed")
        /// An enriched record no key of `RECORD_MAC_KEYS_FILE` signed: not written by enrich.
        public static let recordUnauthenticated = Code(rawValue: "record.unauthenticated")
        /// A stage returned fewer results than records: a bug in the stage.
        public static let returnedNothing = Code(rawValue: "stage.returned_nothing")
        /// An error that says nothing about itself; treated as permanent.
        public static let unclassified = Code(rawValue: "stage.unclassified")
    }

    public let code: Code
    public let message: String
    public let isTransient: Bool
    public let retryAfter: Duration?
    public private(set) var isDeferral = false

    public static func permanent(_ code: Code, _ message: String) -> StageError {
        StageError(code: code, message: message, isTransient: false, retryAfter: nil)
    }

    public static func transient(_ code: Code, _ message: String, retryAfter: Duration? = nil) -> StageError {
        StageError(code: code, message: message, isTransient: true, retryAfter: retryAfter)
    }

    /// The record waits `retryAfter` for something only it needs (``ClassifiedError/isDeferral``).
    public static func deferred(_ code: Code, _ message: String, retryAfter: Duration) -> StageError {
        StageError(code: code, message: message, isTransient: true, retryAfter: retryAfter, isDeferral: true)
    }

    public var description: String { "\(code): \(message)" }
}
