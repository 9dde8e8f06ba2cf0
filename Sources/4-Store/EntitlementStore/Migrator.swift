import Foundation
import LogKeys
import Logging
import PostgresNIO

/// Applies pending migrations in order, each in its own transaction with its record in
/// `schema_migrations` (version, name, checksum); a `-- migrate: no-transaction` file statement by
/// statement, recorded after its last. A migration with a functions directive
/// (``Migration/carriedFunctions``) runs those function files in its transaction right after its
/// statements and records them in `schema_functions`. Then every function file (``SchemaFunction``)
/// whose checksum differs from the one `schema_functions` records, each in its own transaction. A
/// session advisory lock makes concurrent starters (several grant replicas, the migration job) wait
/// for each other instead of racing.
///
/// Every statement waits at most ``lockTimeout`` for a table's lock: a migration queued behind a
/// long transaction would otherwise hold every later writer of that table behind itself (grant
/// stalls for as long). On a timeout the migration is rolled back and tried again, up to
/// ``attempts`` times, then the start fails with `migrate.lock_timeout`.
public struct Migrator: Sendable {
    /// An arbitrary constant naming the migration lock ("grant-migrate").
    static let lockKey: Int64 = 0x6772_616e_745f_6d67

    public let migrations: [Migration]
    /// The function files, run after the migrations when changed.
    public let functions: [SchemaFunction]
    /// How long one statement may wait for a lock before the attempt is given up.
    public var lockTimeout: Duration
    /// How many times a migration is tried when it cannot get its locks in time.
    public var attempts: Int
    /// The wait between attempts (doubling, at most 30 s).
    public var retryDelay: Duration

    public init(
        migrations: [Migration], functions: [SchemaFunction] = [], lockTimeout: Duration = .seconds(5), attempts: Int = 10,
        retryDelay: Duration = .seconds(1)
    ) {
        precondition(attempts > 0 && lockTimeout > .zero, "a migration is tried at least once, with a positive lock timeout")
        self.migrations = migrations
        self.functions = functions
        self.lockTimeout = lockTimeout
        self.attempts = attempts
        self.retryDelay = retryDelay
    }

    /// The migrations of `directory` and its function files.
    public init(directory: String, lockTimeout: Duration = .seconds(5), attempts: Int = 10) throws(MigrationError) {
        self.init(
            migrations: try Migration.load(directory: directory), functions: try SchemaFunction.load(migrationsDirectory: directory),
            lockTimeout: lockTimeout, attempts: attempts)
    }

    /// Applies what is pending; returns the versions applied now.
    @discardableResult
    public func migrate(client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            do {
                let applied = try await apply(on: connection, logger: logger)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    private func apply(on connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer     PRIMARY KEY,
                name       text        NOT NULL,
                checksum   text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
        // Before any migration: one that carries function files records them here.
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_functions (
                name       text        PRIMARY KEY,
                checksum   text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
        var recorded: [Int: (String, String)] = [:]
        for try await (version, name, checksum) in try await connection.query(
            "SELECT version, name, checksum FROM schema_migrations ORDER BY version", logger: logger
        ).decode((Int, String, String).self) {
            recorded[version] = (name, checksum)
        }
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, (name, checksum)) in recorded.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else { throw MigrationError.unknownApplied(version: version) }
            guard migration.checksum == checksum else { throw MigrationError.checksumMismatch(version: version, name: name) }
        }
        let pending = migrations.filter { recorded[$0.version] == nil }
        let carried = try Dictionary(uniqueKeysWithValues: pending.map { ($0.version, try carriedFunctions(of: $0)) })
        var appliedNow: [Int] = []
        for migration in pending {
            try await applyRetryingLocks(migration, carrying: carried[migration.version] ?? [], on: connection, logger: logger)
            logger.info("migration applied", metadata: [LogKey.migrationVersion: "\(migration.version)", LogKey.migrationName: "\(migration.name)"])
            appliedNow.append(migration.version)
        }
        try await applyFunctions(on: connection, logger: logger)
        return appliedNow
    }

    /// Runs each function file whose checksum `schema_functions` does not hold, and records it.
    private func applyFunctions(on connection: PostgresConnection, logger: Logger) async throws {
        guard !functions.isEmpty else { return }
        var recorded: [String: String] = [:]
        for try await (name, checksum) in try await connection.query("SELECT name, checksum FROM schema_functions", logger: logger).decode(
            (String, String).self)
        {
            recorded[name] = checksum
        }
        for function in functions where recorded[function.name] != function.checksum {
            let timeout = "SET LOCAL lock_timeout = '\(Self.milliseconds(lockTimeout))ms'"
            do {
                try await connection.withTransaction(logger: logger) { tx in
                    try await tx.query(PostgresQuery(unsafeSQL: timeout), logger: logger)
                    try await tx.query(PostgresQuery(unsafeSQL: Self.executeBlock(function.sql)), logger: logger)
                    try await tx.query(Self.record(function), logger: logger)
                }
            } catch {
                let classified = StoreError.classify(error)
                if classified.isTransient { throw classified }
                throw MigrationError.functionFailed(name: function.name, reason: classified.message)
            }
            logger.info("function defined", metadata: [LogKey.migrationName: "functions/\(function.name).sql"])
        }
    }

    /// The function files `migration` carries, as this migrator has them.
    private func carriedFunctions(of migration: Migration) throws(MigrationError) -> [SchemaFunction] {
        let problems = MigrationRules.directiveProblems(in: migration)
        guard problems.isEmpty else { throw MigrationError.badDirective(version: migration.version, name: migration.name, problems: problems) }
        return try migration.carriedFunctions.map { (name) throws(MigrationError) -> SchemaFunction in
            guard let function = functions.first(where: { $0.name == name }) else {
                throw MigrationError.unknownFunction(version: migration.version, name: migration.name, function: name)
            }
            return function
        }
    }

    /// Records that the database runs `function` as its file says now.
    static func record(_ function: SchemaFunction) -> PostgresQuery {
        """
        INSERT INTO schema_functions (name, checksum) VALUES (\(function.name), \(function.checksum))
        ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
        """
    }

    /// Applies one migration, again after a pause whenever a statement waited too long for a lock.
    private func applyRetryingLocks(
        _ migration: Migration, carrying carried: [SchemaFunction], on connection: PostgresConnection, logger: Logger
    ) async throws {
        var delay = retryDelay
        for attempt in 1...attempts {
            do {
                try await apply(migration, carrying: carried, on: connection, logger: logger)
                return
            } catch {
                let classified = StoreError.classify(error)
                guard classified.code == .sql("55P03") else {
                    if classified.isTransient { throw classified }
                    throw MigrationError.failed(version: migration.version, name: migration.name, reason: classified.message)
                }
                guard attempt < attempts else { break }
                logger.warning(
                    "migration waited too long for a lock; trying again",
                    metadata: [
                        LogKey.migrationVersion: "\(migration.version)", LogKey.attempt: "\(attempt)",
                        LogKey.retryDelay: "\(Self.milliseconds(delay))",
                    ])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(30))
            }
        }
        throw MigrationError.lockTimeout(version: migration.version, name: migration.name, attempts: attempts)
    }

    /// Runs `migration` and records it; in its transaction, after its statements, the function
    /// files it carries, each recorded (a no-transaction migration carries none: refused at load).
    private func apply(
        _ migration: Migration, carrying carried: [SchemaFunction], on connection: PostgresConnection, logger: Logger
    ) async throws {
        let timeout = "SET lock_timeout = '\(Self.milliseconds(lockTimeout))ms'"
        let record: PostgresQuery = """
            INSERT INTO schema_migrations (version, name, checksum)
            VALUES (\(migration.version), \(migration.name), \(migration.checksum))
            """
        guard migration.transactional else {
            // One statement at a time, each its own transaction: what CREATE INDEX CONCURRENTLY needs.
            try await connection.query(PostgresQuery(unsafeSQL: timeout), logger: logger)
            do {
                try await dropInvalidIndexes(of: migration, on: connection, logger: logger)
                for statement in SQLStatements.split(migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(record, logger: logger)
            } catch {
                _ = try? await connection.query("RESET lock_timeout", logger: logger)
                throw error
            }
            try await connection.query("RESET lock_timeout", logger: logger)
            return
        }
        try await connection.withTransaction(logger: logger) { tx in
            try await tx.query(PostgresQuery(unsafeSQL: timeout.replacingOccurrences(of: "SET ", with: "SET LOCAL ")), logger: logger)
            try await tx.query(PostgresQuery(unsafeSQL: Self.executeBlock(migration.sql)), logger: logger)
            for function in carried {
                try await tx.query(PostgresQuery(unsafeSQL: Self.executeBlock(function.sql)), logger: logger)
                try await tx.query(Self.record(function), logger: logger)
            }
            try await tx.query(record, logger: logger)
        }
        for function in carried {
            logger.info(
                "function defined",
                metadata: [LogKey.migrationName: "functions/\(function.name).sql", LogKey.migrationVersion: "\(migration.version)"])
        }
    }

    /// A concurrent index build that failed (a lock timeout, a cancelled start) leaves its index
    /// behind marked invalid, and `CREATE INDEX CONCURRENTLY IF NOT EXISTS` would then keep it as it
    /// is. Before a no-transaction migration runs again, every invalid index it names is dropped.
    private func dropInvalidIndexes(of migration: Migration, on connection: PostgresConnection, logger: Logger) async throws {
        var invalid: [String] = []
        for try await name in try await connection.query(
            """
            SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT i.indisvalid AND n.nspname = current_schema()
            """, logger: logger
        ).decode(String.self) {
            invalid.append(name)
        }
        let text = SQLStatements.normalized(migration.sql)
        for name in invalid where text.contains(name.lowercased()) {
            logger.warning("dropping an invalid index an earlier attempt left", metadata: [LogKey.migrationVersion: "\(migration.version)"])
            try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \"\(name)\""), logger: logger)
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    /// The extended query protocol runs one statement at a time; a migration file holds many. A
    /// `DO` block's `EXECUTE` runs them all, inside the caller's transaction. The file's text is
    /// dollar-quoted with a tag it does not contain.
    static func executeBlock(_ sql: String) -> String {
        var tag = "migration"
        var n = 0
        while sql.contains("$\(tag)$") {
            n += 1
            tag = "migration\(n)"
        }
        return "DO $do_migration$ BEGIN EXECUTE $\(tag)$\(sql)$\(tag)$; END $do_migration$"
    }
}
