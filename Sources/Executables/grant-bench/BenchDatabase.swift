import EntitlementStore
import Foundation
import Logging
import PostgresNIO

/// The bench's own database on the configured server: created, migrated with the configured (or
/// located) migrations, handed out, dropped afterwards, so each run starts empty and leaves nothing
/// behind. The tests' scratch database does the same but reads its defaults from test support.
enum BenchDatabase {
    static func with<T: Sendable>(
        on server: StoreConfiguration, logger: Logger, _ body: @Sendable (EntitlementStore) async throws -> T
    ) async throws -> T {
        let name = "grant_bench_\(UUID().uuidString.prefix(8).lowercased())"
        try await admin("CREATE DATABASE \(name)", on: server, logger: logger)
        var configuration = server
        configuration.database = name
        let database = configuration
        let result: Result<T, any Error>
        do {
            result = .success(
                try await database.withTemporaryClient(logger: logger) { client in
                    let directory = try Migration.locateDirectory(explicit: database.migrationsDirectory)
                    try await Migrator(migrations: try Migration.load(directory: directory)).migrate(client: client, logger: logger)
                    return try await body(EntitlementStore(client: client, logger: logger))
                })
        } catch {
            result = .failure(error)
        }
        try? await admin("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", on: server, logger: logger)
        return try result.get()
    }

    /// Runs one statement on the server's `postgres` database.
    private static func admin(_ sql: String, on server: StoreConfiguration, logger: Logger) async throws {
        var maintenance = server
        maintenance.database = "postgres"
        try await maintenance.withTemporaryClient(logger: logger) { client in
            _ = try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        }
    }
}
