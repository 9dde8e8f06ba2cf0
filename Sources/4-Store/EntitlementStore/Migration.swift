import Crypto
import Foundation

/// One schema migration: a plain SQL file `NNNN_name.sql` under `schemas/migrations/`.
public struct Migration: Hashable, Sendable {
    public var version: Int
    public var name: String
    public var sql: String
    /// SHA-256 of the file, hex: an applied file that changed afterwards stops the start.
    public var checksum: String
    /// False when one of the file's directives (its first lines) is ``MigrationRules/noTransactionDirective``: its statements
    /// then run one by one outside a transaction (for `CREATE INDEX CONCURRENTLY`), so each must be
    /// safe to run again (`IF NOT EXISTS`) should the migration be retried.
    public var transactional: Bool
    /// The function files (``SchemaFunction``) this migration carries, named by its directive
    /// ``MigrationRules/functionsDirective``: run in its own transaction right after its statements
    /// and recorded in `schema_functions`, so a migration that changes what a function reads takes the
    /// function's current definition with it, while the function stays defined in its one file.
    public var carriedFunctions: [String]

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
        let directives = MigrationRules.directives(in: sql)
        self.transactional = !directives.contains(MigrationRules.noTransactionDirective)
        self.carriedFunctions = directives.flatMap(MigrationRules.functionNames)
    }

    /// Reads every `NNNN_name.sql` of `directory`, ordered by version; refuses duplicates, files
    /// whose name does not start with a version number, unsafe files (``MigrationRules``), malformed
    /// directives and a directive that names a function file `directory/functions` does not have.
    public static func load(directory: String) throws(MigrationError) -> [Migration] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            throw MigrationError.directoryUnreadable(directory)
        }
        var migrations: [Migration] = []
        for file in names.sorted() where file.hasSuffix(".sql") {
            let stem = String(file.dropLast(4))
            let digits = stem.prefix { $0.isNumber }
            guard !digits.isEmpty, let version = Int(digits) else { throw MigrationError.badFileName(file) }
            guard let sql = try? String(contentsOfFile: directory + "/" + file, encoding: .utf8) else {
                throw MigrationError.directoryUnreadable(directory + "/" + file)
            }
            if migrations.contains(where: { $0.version == version }) { throw MigrationError.duplicateVersion(version) }
            let migration = Migration(version: version, name: stem, sql: sql)
            let directiveProblems = MigrationRules.directiveProblems(in: migration)
            guard directiveProblems.isEmpty else { throw MigrationError.badDirective(version: version, name: stem, problems: directiveProblems) }
            let functionFiles = directory + "/" + SchemaFunction.subdirectory + "/"
            for function in migration.carriedFunctions where !FileManager.default.fileExists(atPath: functionFiles + function + ".sql") {
                throw MigrationError.unknownFunction(version: version, name: stem, function: function)
            }
            let defined = (try? FileManager.default.contentsOfDirectory(atPath: functionFiles)) ?? []
            let problems =
                MigrationRules.problems(in: migration)
                + MigrationRules.redefinitions(
                    in: migration, functionFiles: Set(defined.filter { $0.hasSuffix(".sql") }.map { String($0.dropLast(4)) }))
            guard problems.isEmpty else { throw MigrationError.unsafe(version: version, name: stem, problems: problems) }
            migrations.append(migration)
        }
        guard !migrations.isEmpty else { throw MigrationError.noMigrations(directory) }
        return migrations.sorted { $0.version < $1.version }
    }

    /// The migrations directory: `explicit` when given, else the first `schemas/migrations` found
    /// from the working directory or upwards from the executable (a checkout's `.build/…/grant`),
    /// else `/usr/share/appstore-entitlements/migrations` (container images).
    public static func locateDirectory(explicit: String?) throws(MigrationError) -> String {
        if let explicit { return explicit }
        var candidates = [FileManager.default.currentDirectoryPath + "/schemas/migrations"]
        var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(dir.path + "/schemas/migrations")
            dir = dir.deletingLastPathComponent()
        }
        candidates.append("/usr/share/appstore-entitlements/migrations")
        for candidate in candidates {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDir), isDir.boolValue { return candidate }
        }
        throw MigrationError.noMigrations("schemas/migrations (searched from the working directory and the executable; set POSTGRES_MIGRATIONS_DIR)")
    }
}

/// Why migrations could not be applied. Each is permanent: the process refuses to start.
public enum MigrationError: Error, Hashable, Sendable, CustomStringConvertible {
    case directoryUnreadable(String)
    case noMigrations(String)
    case badFileName(String)
    case duplicateVersion(Int)
    /// An applied migration's file changed since it was applied.
    case checksumMismatch(version: Int, name: String)
    /// The database has a migration this build does not know (a newer build migrated it).
    case unknownApplied(version: Int)
    case failed(version: Int, name: String, reason: String)
    /// A migration that would block grant's writes on a live database (``MigrationRules``).
    case unsafe(version: Int, name: String, problems: [String])
    /// A migration kept waiting for a table's lock longer than the lock timeout, every attempt.
    case lockTimeout(version: Int, name: String, attempts: Int)
    /// A function file (``SchemaFunction``) that defines something else, or PL/pgSQL without a pinned search_path.
    case unsafeFunction(name: String, problems: [String])
    /// A function file the database refused.
    case functionFailed(name: String, reason: String)
    /// A `-- migrate:` directive that is unknown, misplaced, or combined with one it cannot be.
    case badDirective(version: Int, name: String, problems: [String])
    /// A migration's functions directive names a function file that does not exist.
    case unknownFunction(version: Int, name: String, function: String)

    public var code: String {
        switch self {
        case .directoryUnreadable: "migrate.unreadable"
        case .noMigrations: "migrate.none_found"
        case .badFileName: "migrate.bad_file_name"
        case .duplicateVersion: "migrate.duplicate_version"
        case .checksumMismatch: "migrate.checksum_mismatch"
        case .unknownApplied: "migrate.unknown_applied"
        case .failed: "migrate.failed"
        case .unsafe: "migrate.unsafe"
        case .lockTimeout: "migrate.lock_timeout"
        case .unsafeFunction: "migrate.unsafe_function"
        case .functionFailed: "migrate.function_failed"
        case .badDirective: "migrate.bad_directive"
        case .unknownFunction: "migrate.unknown_function"
        }
    }

    public var description: String {
        switch self {
        case .directoryUnreadable(let path): "\(code): cannot read \(path)"
        case .noMigrations(let path): "\(code): no NNNN_name.sql migrations in \(path)"
        case .badFileName(let file): "\(code): \(file) does not start with a version number (NNNN_name.sql)"
        case .duplicateVersion(let v): "\(code): two migration files have version \(v)"
        case .checksumMismatch(let v, let name):
            "\(code): migration \(v) (\(name)) was applied but its file has changed since; restore it and add a new migration instead"
        case .unknownApplied(let v):
            "\(code): the database has migration \(v), which this build does not have (is an older build starting against a newer schema?)"
        case .failed(let v, let name, let reason): "\(code): migration \(v) (\(name)) failed: \(reason)"
        case .unsafe(let v, let name, let problems):
            "\(code): migration \(v) (\(name)) is not safe on a live database (docs/migrations.md): \(problems.joined(separator: "; "))"
        case .lockTimeout(let v, let name, let attempts):
            "\(code): migration \(v) (\(name)) waited longer than the lock timeout for a table's lock in each of \(attempts) attempts and is not recorded as applied (a long transaction holds the table: find it in pg_stat_activity, end it or wait, then start again; the migration runs again from its start)"
        case .unsafeFunction(let name, let problems):
            "\(code): functions/\(name).sql must define the function \(name) and nothing else (docs/migrations.md, \"Functions\"): \(problems.joined(separator: "; "))"
        case .functionFailed(let name, let reason): "\(code): functions/\(name).sql failed: \(reason)"
        case .badDirective(let v, let name, let problems):
            "\(code): migration \(v) (\(name)) has a directive it cannot have (docs/migrations.md): \(problems.joined(separator: "; "))"
        case .unknownFunction(let v, let name, let function):
            "\(code): migration \(v) (\(name)) carries the function \(function), but there is no functions/\(function).sql"
        }
    }
}
