import ErrorClassification
import PostgresNIO

/// A database failure, classified for the stage runtime: transient ones (the database is down,
/// restarting, overloaded, a serialization conflict or deadlock) are retried in place; the rest are
/// permanent for the batch (the runtime then isolates the record that causes it).
public struct StoreError: ClassifiedError, CustomStringConvertible {
    /// The `store.<reason>` codes (schemas/headers.md).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Postgres could not be reached, or a connection broke.
        public static let unavailable = Code(rawValue: "store.unavailable")
        /// Postgres did not answer within the store's deadline.
        public static let timeout = Code(rawValue: "store.timeout")
        /// A transaction failed without saying why (its begin, commit or body).
        public static let transactionFailed = Code(rawValue: "store.transaction_failed")
        /// A statement was built with more bind parameters than Postgres accepts: a bug.
        public static let tooManyParameters = Code(rawValue: "store.too_many_parameters")
        /// The call was cancelled (shutdown); the record is retried.
        public static let cancelled = Code(rawValue: "store.cancelled")
        /// Any other failure of a database call.
        public static let failed = Code(rawValue: "store.failed")
        /// A customer the transaction changed has no row: the schema and the code disagree.
        public static let customerMissing = Code(rawValue: "store.customer_missing")
        /// `grant_load` returned a row of a kind this build does not know (a newer migration).
        public static let unexpectedRow = Code(rawValue: "store.unexpected_row")

        /// Postgres answered with an error: `store.sql_<SQLSTATE in lower case>`, e.g. `store.sql_40001`.
        public static func sql(_ state: String) -> Code { Code(rawValue: "store.sql_\(state.lowercased())") }
    }

    public let code: Code
    public let message: String
    public let isTransient: Bool

    public init(code: Code, message: String, isTransient: Bool) {
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
            return StoreError(code: .transactionFailed, message: "the transaction failed", isTransient: true)
        }
        if let e = error as? PSQLError {
            if e.code == .server {
                let state = e.serverInfo?[.sqlState] ?? "?????"
                let transient = transientStates.contains(state) || transientClasses.contains(String(state.prefix(2)))
                let what = e.serverInfo?[.message] ?? "server error"
                return StoreError(code: .sql(state), message: "Postgres answered \(state): \(what)", isTransient: transient)
            }
            if e.code == .tooManyParameters {
                return StoreError(code: .tooManyParameters, message: "a statement had too many parameters", isTransient: false)
            }
            return StoreError(code: .unavailable, message: "Postgres is unavailable (\(e.code))", isTransient: true)
        }
        // The pool's own errors (`_ConnectionPoolModule.ConnectionPoolError`: the connection
        // circuit breaker tripped while Postgres is unreachable, a cancelled lease) are not mapped
        // to PSQLError by postgres-nio, and their module is not public API: matched by type name.
        if String(describing: type(of: error)) == "ConnectionPoolError" {
            return StoreError(code: .unavailable, message: "Postgres is unreachable (\(error))", isTransient: true)
        }
        if error is CancellationError {
            return StoreError(code: .cancelled, message: "the database call was cancelled", isTransient: true)
        }
        if let e = error as? any ClassifiedError {
            return StoreError(code: Code(rawValue: e.code.rawValue), message: e.message, isTransient: e.isTransient)
        }
        return StoreError(code: .failed, message: "the database call failed: \(type(of: error))", isTransient: false)
    }
}
