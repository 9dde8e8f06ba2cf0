import EntitlementStore
import Foundation
import Logging
import PostgresNIO

/// A database of its own on a Postgres server, for one test suite or one benchmark run: created,
/// migrated with the configured (or located) migrations, handed out, and dropped afterwards, so each
/// run starts empty and leaves nothing behind.
public enum TemporaryDatabase {
    /// - Parameters:
    ///   - server: host, credentials, pool size and migrations; its `database` is ignored.
    ///   - prefix: the start of the database's name (a random suffix follows).
    ///   - migrate: false to hand out an empty database (a migration test runs its own).
    ///   - body: gets the database's name, its configuration and a client on it.
    public static func with<T: Sendable>(
        on server: StoreConfiguration, prefix: String, migrate: Bool = true, logger: Logger,
        _ body: @Sendable (_ name: String, _ configuration: StoreConfiguration, _ client: PostgresClient) async throws -> T
    ) async throws -> T {
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        try await admin("CREATE DATABASE \(name)", on: server, logger: logger)
        var configuration = server
        configuration.database = name
        let database = configuration
        let result: Result<T, any Error>
        do {
            result = .success(
                try await database.withTemporaryClient(logger: logger) { client in
                    if migrate {
                        let directory = try Migration.locateDirectory(explicit: database.migrationsDirectory)
                        try await Migrator(directory: directory).migrate(client: client, logger: logger)
                    }
                    return try await body(name, database, client)
                })
        } catch {
            result = .failure(error)
        }
        try? await admin("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", on: server, logger: logger)
        return try result.get()
    }

    /// Runs one statement on the server's `postgres` database.
    public static func admin(_ sql: String, on server: StoreConfiguration, logger: Logger) async throws {
        var maintenance = server
        maintenance.database = "postgres"
        try await maintenance.withTemporaryClient(logger: logger) { client in
            _ = try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        }
    }
}
