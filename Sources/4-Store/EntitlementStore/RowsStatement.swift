import Foundation
import JSONCoding
import PostgresNIO

/// One column of a statement's rows: its name and SQL type where the statement reads the rows, and
/// how the rows' values are bound (one array parameter per column). Naming each column once, with
/// its type and its field, keeps the SQL and the bindings from disagreeing.
struct RowColumn<Row>: Sendable {
    let name: String
    let type: String
    /// The array type the values are sent as (declared when the statement is prepared).
    let dataType: PostgresDataType
    let bind: @Sendable ([Row], inout PostgresBindings) throws -> Void

    init<T: PostgresArrayEncodable & PostgresNonThrowingEncodable>(_ name: String, _ type: String, _ field: KeyPath<Row, T> & Sendable) {
        (self.name, self.type, dataType) = (name, type, T.psqlArrayType)
        bind = { rows, bindings in bindings.append(rows.map { $0[keyPath: field] }) }
    }

    init<T: PostgresArrayEncodable & PostgresNonThrowingEncodable>(_ name: String, _ type: String, _ field: KeyPath<Row, T?> & Sendable) {
        (self.name, self.type, dataType) = (name, type, T.psqlArrayType)
        bind = { rows, bindings in bindings.append(NullableColumn(rows.map { $0[keyPath: field] })) }
    }

    /// Moments, to the nearest microsecond (``PostgresMicroseconds``).
    init(_ name: String, moments field: KeyPath<Row, Date> & Sendable) {
        (self.name, type, dataType) = (name, "timestamptz", .timestamptzArray)
        bind = { rows, bindings in bindings.append(rows.map { PostgresMicroseconds($0[keyPath: field]) }) }
    }

    /// Moments, some absent.
    init(_ name: String, moments field: KeyPath<Row, Date?> & Sendable) {
        (self.name, type, dataType) = (name, "timestamptz", .timestamptzArray)
        bind = { rows, bindings in bindings.append(NullableColumn(rows.map { $0[keyPath: field].map(PostgresMicroseconds.init) })) }
    }

    /// A value written as the project's own JSON (``StreamingJSONEncoder``), sent as text.
    init<T: Encodable>(_ name: String, json field: KeyPath<Row, T> & Sendable) {
        (self.name, type, dataType) = (name, "text", .textArray)
        bind = { rows, bindings in bindings.append(try rows.map { try StreamingJSONEncoder.encodeToString($0[keyPath: field]) }) }
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
