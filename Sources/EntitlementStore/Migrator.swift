import EnvironmentSettings
import Foundation
import Logging
import PostgresNIO

/// Applies pending migrations in order, each in its own transaction with its record in
/// `schema_migrations` (version, name, checksum). A session advisory lock makes concurrent starters
/// (several grant replicas, the migration job) wait for each other instead of racing.
public struct Migrator: Sendable {
    /// An arbitrary constant naming the migration lock ("grant-migrate").
    static let lockKey: Int64 = 0x6772_616e_745f_6d67

    public let migrations: [Migration]

    public init(migrations: [Migration]) {
        self.migrations = migrations
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
        var appliedNow: [Int] = []
        for migration in migrations where recorded[migration.version] == nil {
            do {
                try await connection.withTransaction(logger: logger) { tx in
                    try await tx.query(PostgresQuery(unsafeSQL: Self.executeBlock(migration.sql)), logger: logger)
                    try await tx.query(
                        """
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                        """, logger: logger)
                }
            } catch {
                let classified = StoreError.classify(error)
                if classified.isTransient { throw classified }
                let reason = classified.message
                throw MigrationError.failed(version: migration.version, name: migration.name, reason: reason)
            }
            logger.info("migration applied", metadata: [LogKey.migrationVersion: "\(migration.version)", LogKey.migrationName: "\(migration.name)"])
            appliedNow.append(migration.version)
        }
        return appliedNow
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
