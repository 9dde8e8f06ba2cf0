import EnvironmentSettings
import PostgresNIO

/// A database failure, classified for the stage runtime: transient ones (the database is down,
/// restarting, overloaded, a serialization conflict or deadlock) are retried in place; the rest are
/// permanent for the batch (the runtime then isolates the record that causes it).
public struct StoreError: ClassifiedError, CustomStringConvertible {
    public let code: String
    public let message: String
    public let isTransient: Bool

    public init(code: String, message: String, isTransient: Bool) {
        self.code = code
        self.message = message
        self.isTransient = isTransient
    }

    public var description: String { "\(code): \(message)" }

    /// SQLSTATE classes and codes that heal by themselves: connection exceptions (08), insufficient
    /// resources (53), operator intervention such as a restart (57), serialization failure and
    /// deadlock (40001, 40P01), lock not available (55P03), invalid authorization (28: a password
    /// being rotated; retried rather than dead-lettering every record).
    private static let transientClasses: Set<String> = ["08", "53", "57", "28"]
    private static let transientStates: Set<String> = ["40001", "40P01", "55P03"]

    /// Classifies any error thrown while talking to Postgres. Never includes SQL or row data.
    public static func classify(_ error: any Error) -> StoreError {
        if let e = error as? StoreError { return e }
        if let e = error as? PostgresTransactionError {
            if let inner = e.closureError { return classify(inner) }
            if let inner = e.beginError ?? e.commitError { return classify(inner) }
            return StoreError(code: "store.transaction_failed", message: "the transaction failed", isTransient: true)
        }
        if let e = error as? PSQLError {
            if e.code == .server {
                let state = e.serverInfo?[.sqlState] ?? "?????"
                let transient = transientStates.contains(state) || transientClasses.contains(String(state.prefix(2)))
                let what = e.serverInfo?[.message] ?? "server error"
                return StoreError(code: "store.sql_\(state)", message: "Postgres answered \(state): \(what)", isTransient: transient)
            }
            if e.code == .tooManyParameters {
                return StoreError(code: "store.too_many_parameters", message: "a statement had too many parameters", isTransient: false)
            }
            return StoreError(code: "store.unavailable", message: "Postgres is unavailable (\(e.code))", isTransient: true)
        }
        // The pool's own errors (`_ConnectionPoolModule.ConnectionPoolError`: the connection
        // circuit breaker tripped while Postgres is unreachable, a cancelled lease) are not mapped
        // to PSQLError by postgres-nio, and their module is not public API: matched by type name.
        if String(describing: type(of: error)) == "ConnectionPoolError" {
            return StoreError(code: "store.unavailable", message: "Postgres is unreachable (\(error))", isTransient: true)
        }
        if error is CancellationError {
            return StoreError(code: "store.cancelled", message: "the database call was cancelled", isTransient: true)
        }
        if let e = error as? any ClassifiedError {
            return StoreError(code: e.code, message: e.message, isTransient: e.isTransient)
        }
        return StoreError(code: "store.failed", message: "the database call failed: \(type(of: error))", isTransient: false)
    }
}
