import Crypto
import Foundation

/// One SQL function defined in one file, `functions/<name>.sql` beside the versioned migrations:
/// the function's whole current definition (its settings included) in one place, instead of spread
/// over the migrations that redefined it. The migrator runs a file after the versioned migrations
/// whenever its checksum differs from the one `schema_functions` records, so editing the file is how
/// a function changes. A changed signature is a new function: the old one stays until a versioned
/// migration drops it, so replicas of the previous release keep working during a rolling update
/// (docs/migrations.md, "Functions").
public struct SchemaFunction: Hashable, Sendable {
    /// The function's name, which is the file's.
    public var name: String
    public var sql: String
    /// SHA-256 of the file, hex.
    public var checksum: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The subdirectory of the migrations directory that holds the function files.
    public static let subdirectory = "functions"

    /// Reads every `<name>.sql` of `directory/functions` (none when the subdirectory is absent),
    /// ordered by name; refuses a file that defines anything but its own function.
    public static func load(migrationsDirectory directory: String) throws(MigrationError) -> [SchemaFunction] {
        let path = directory + "/" + subdirectory
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { throw MigrationError.directoryUnreadable(path) }
        var functions: [SchemaFunction] = []
        for file in names.sorted() where file.hasSuffix(".sql") {
            guard let sql = try? String(contentsOfFile: path + "/" + file, encoding: .utf8) else {
                throw MigrationError.directoryUnreadable(path + "/" + file)
            }
            let function = SchemaFunction(name: String(file.dropLast(4)), sql: sql)
            let problems = function.problems
            guard problems.isEmpty else { throw MigrationError.unsafeFunction(name: function.name, problems: problems) }
            functions.append(function)
        }
        return functions
    }

    /// Why this file cannot be applied as its function's one definition; empty when it can. Every
    /// statement is `CREATE OR REPLACE FUNCTION <name>(…)` (at least one; overloads allowed), a
    /// `COMMENT ON FUNCTION <name>` or a `GRANT … ON FUNCTION <name>`, and a PL/pgSQL body pins its
    /// search_path (``MigrationRules``).
    public var problems: [String] {
        let statements = SQLStatements.split(sql).map(SQLStatements.normalized)
        let lower = name.lowercased()
        var problems: [String] = []
        var defines = false
        for statement in statements {
            if statement.hasPrefix("create or replace function \(lower)(") || statement.hasPrefix("create or replace function public.\(lower)(") {
                defines = true
                if MigrationRules.definesFunctionWithoutPinnedPath(statement) {
                    problems.append("'\(statement.prefix(80))' is PL/pgSQL without SET search_path = public, pg_temp")
                }
            } else if !(statement.hasPrefix("comment on function \(lower)(")
                || statement.hasPrefix("grant ") && statement.contains(" on function \(lower)("))
            {
                problems.append("'\(statement.prefix(80))' is not a definition of \(name) (CREATE OR REPLACE FUNCTION \(name)(…))")
            }
        }
        if !defines { problems.append("it defines no function \(name) (CREATE OR REPLACE FUNCTION \(name)(…))") }
        return problems
    }
}
