import PostgresNIO

/// One statement of ``StoreStatements`` that takes the batch's `jsonb` array as its only parameter.
/// Each conforming type names one statement, because postgres-nio prepares a statement per type.
protocol BatchStatement {
    static var sql: String { get }
}

/// A ``BatchStatement`` with its argument, run as a named server-side prepared statement:
/// postgres-nio prepares it once per connection, and Postgres then reuses one generic plan
/// (`batch_rows` estimates its rows without looking at the argument). Parsing and planning every
/// statement of every batch had been most of Postgres's own work when batches are small.
struct PreparedBatch<Statement: BatchStatement>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { "appstore.\(Statement.self)" }
    static var sql: String { Statement.sql }
    static var bindingDataTypes: [PostgresDataType] { [.text] }

    /// The batch's rows as one JSON array (``StoreRows/json(_:)``).
    let json: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(json)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension PostgresConnection {
    /// Runs `statement` with `json` as a prepared statement; the rows decode like a query's.
    func execute<S: BatchStatement>(
        _ statement: S.Type, _ json: String, logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow> {
        try await execute(PreparedBatch<S>(json: json), logger: logger)
    }
}

/// The statements as types (see ``BatchStatement``); the SQL stays in ``StoreStatements``.
extension StoreStatements {
    enum DeletePublished: BatchStatement { static var sql: String { deletePublished } }
    enum RecordMassExtensions: BatchStatement { static var sql: String { recordMassExtensions } }
    enum RecordConsentRescinds: BatchStatement { static var sql: String { recordConsentRescinds } }
    enum RecordExternalPurchaseTokens: BatchStatement { static var sql: String { recordExternalPurchaseTokens } }
    enum MarkExternalPurchaseTokensPublished: BatchStatement { static var sql: String { markExternalPurchaseTokensPublished } }
}
