import Foundation
import JSONCoding
import PostgresNIO

/// One array parameter of a statement, read from `Source`: its name and SQL type where the
/// statement names it, the array type it is sent as (declared when the statement is prepared), and
/// how it is bound. The one place that says how a Swift column goes to Postgres: as it is (`[T]`),
/// with NULLs (``NullableColumn``, which postgres-nio lacks), as moments to the nearest microsecond
/// (``PostgresMicroseconds``; postgres-nio's `Date` truncates), or as the project's own JSON.
/// `grant_write`'s parameters (``GrantWriteColumns``) and the rarer statements' columns
/// (``RowColumn``) are both built on it.
struct ArrayParameter<Source>: Sendable {
    let name: String
    let type: String
    let dataType: PostgresDataType
    let bind: @Sendable (Source, inout PostgresBindings) throws -> Void

    init<T: PostgresArrayEncodable & PostgresNonThrowingEncodable>(
        _ name: String, _ type: String, values: @escaping @Sendable (Source) -> [T]
    ) {
        (self.name, self.type, dataType) = (name, type, T.psqlArrayType)
        bind = { source, bindings in bindings.append(values(source)) }
    }

    init<T: PostgresArrayEncodable & PostgresNonThrowingEncodable>(
        _ name: String, _ type: String, values: @escaping @Sendable (Source) -> [T?]
    ) {
        (self.name, self.type, dataType) = (name, type, T.psqlArrayType)
        bind = { source, bindings in bindings.append(NullableColumn(values(source))) }
    }

    init(_ name: String, _ type: String, moments: @escaping @Sendable (Source) -> [Date]) {
        (self.name, self.type, dataType) = (name, type, .timestamptzArray)
        bind = { source, bindings in bindings.append(moments(source).map(PostgresMicroseconds.init)) }
    }

    init(_ name: String, _ type: String, moments: @escaping @Sendable (Source) -> [Date?]) {
        (self.name, self.type, dataType) = (name, type, .timestamptzArray)
        bind = { source, bindings in bindings.append(NullableColumn(moments(source).map { $0.map(PostgresMicroseconds.init) })) }
    }

    init<T: Encodable>(_ name: String, _ type: String, json: @escaping @Sendable (Source) -> [T]) {
        (self.name, self.type, dataType) = (name, type, .textArray)
        bind = { source, bindings in bindings.append(try json(source).map { try StreamingJSONEncoder.encodeToString($0) }) }
    }
}

/// One column of a statement's rows: named with its element's SQL type, read as the table `r`
/// (``RowsStatement/rowsTable``), one array of every row's field.
typealias RowColumn<Row> = ArrayParameter<[Row]>

extension ArrayParameter {
    init<Row, T: PostgresArrayEncodable & PostgresNonThrowingEncodable>(
        _ name: String, _ type: String, _ field: KeyPath<Row, T> & Sendable
    ) where Source == [Row] {
        self.init(name, type, values: { $0.map { $0[keyPath: field] } })
    }

    init<Row, T: PostgresArrayEncodable & PostgresNonThrowingEncodable>(
        _ name: String, _ type: String, _ field: KeyPath<Row, T?> & Sendable
    ) where Source == [Row] {
        self.init(name, type, values: { $0.map { $0[keyPath: field] } })
    }

    init<Row>(_ name: String, moments field: KeyPath<Row, Date> & Sendable) where Source == [Row] {
        self.init(name, "timestamptz", moments: { $0.map { $0[keyPath: field] } })
    }

    init<Row>(_ name: String, moments field: KeyPath<Row, Date?> & Sendable) where Source == [Row] {
        self.init(name, "timestamptz", moments: { $0.map { $0[keyPath: field] } })
    }

    init<Row, T: Encodable>(_ name: String, json field: KeyPath<Row, T> & Sendable) where Source == [Row] {
        self.init(name, "text", json: { $0.map { $0[keyPath: field] } })
    }
}

/// A statement of the store that takes a list of rows. Each conforming type names one statement,
/// because postgres-nio prepares a statement per type.
protocol RowsStatement {
    associatedtype Row: Sendable
    static var columns: [RowColumn<Row>] { get }
    /// The statement, reading the rows as the table `rows` names (``rowsTable``).
    static func sql(rows: String) -> String
}

extension RowsStatement {
    /// The rows as a table `r`, one column per ``RowColumn``: `unnest($1::text[], …) AS r(environment, …)`.
    static var rowsTable: String {
        let arrays = columns.enumerated().map { "$\($0.offset + 1)::\($0.element.type)[]" }
        return "unnest(\(arrays.joined(separator: ", "))) AS r(\(columns.map(\.name).joined(separator: ", ")))"
    }
}

/// A ``RowsStatement`` with its rows, run as a named server-side prepared statement: postgres-nio
/// prepares it once per connection, and Postgres then reuses its plan.
struct PreparedRows<Statement: RowsStatement>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { "appstore.\(Statement.self)" }
    static var sql: String { Statement.sql(rows: Statement.rowsTable) }
    static var bindingDataTypes: [PostgresDataType] { Statement.columns.map(\.dataType) }

    let rows: [Statement.Row]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: Statement.columns.count)
        for column in Statement.columns { try column.bind(rows, &bindings) }
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension PostgresConnection {
    /// Runs `statement` with `rows` as a prepared statement, to its end.
    func run<S: RowsStatement>(_ statement: S.Type, _ rows: [S.Row], logger: Logger) async throws {
        for try await _ in try await execute(PreparedRows<S>(rows: rows), logger: logger) {}
    }
}
