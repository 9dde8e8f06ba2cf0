import EntitlementStore
import Foundation
import GrantDecision
import Logging
import PostgresNIO

/// A fresh database on the local Postgres (`deploy/local/up`), migrated with the repository's
/// `schemas/migrations`, with a running `PostgresClient`; dropped afterwards. Each test gets its
/// own, so tests run in parallel without seeing each other's rows.
public struct ScratchDatabase: Sendable {
    public let name: String
    public let configuration: StoreConfiguration
    public let client: PostgresClient
    public let store: EntitlementStore

    public static var host: String { ProcessInfo.processInfo.environment["POSTGRES_HOST"] ?? "127.0.0.1" }
    public static var port: Int { Int(ProcessInfo.processInfo.environment["POSTGRES_PORT"] ?? "") ?? 15432 }

    /// The repository's migrations.
    public static let migrationsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("schemas/migrations").path

    /// True when the local Postgres answers (or in CI, where a missing database must fail).
    public static var enabled: Bool {
        if ProcessInfo.processInfo.environment["CI"] == "true" { return true }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr(host == "localhost" ? "127.0.0.1" : host)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    public static func configuration(database: String) -> StoreConfiguration {
        StoreConfiguration(
            host: host, port: port, username: ProcessInfo.processInfo.environment["POSTGRES_USER"] ?? "postgres",
            password: ProcessInfo.processInfo.environment["POSTGRES_PASSWORD"], database: database, tls: .disable,
            maximumConnections: 8, migrate: true, migrationsDirectory: migrationsDirectory)
    }

    public static var logger: Logger {
        var l = Logger(label: "grant-tests")
        l.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        return l
    }

    /// Creates, migrates and hands out a scratch database on `server` (its host, credentials, pool
    /// size and migrations; by default the local Postgres with the repository's migrations); drops
    /// it when `body` returns.
    public static func with<T: Sendable>(
        on server: StoreConfiguration = configuration(database: "postgres"), migrate: Bool = true,
        _ body: @Sendable (ScratchDatabase) async throws -> T
    ) async throws -> T {
        let name = "grant_scratch_\(UUID().uuidString.prefix(8).lowercased())"
        try await admin("CREATE DATABASE \(name)", on: server)
        var configuration = server
        configuration.database = name
        let database = configuration
        let result: Result<T, any Error>
        do {
            result = .success(try await database.withTemporaryClient(logger: logger) { client in
                if migrate {
                    let directory = try Migration.locateDirectory(explicit: database.migrationsDirectory)
                    try await Migrator(migrations: try Migration.load(directory: directory)).migrate(client: client, logger: logger)
                }
                return try await body(ScratchDatabase(
                    name: name, configuration: database, client: client, store: EntitlementStore(client: client, logger: logger)))
            })
        } catch {
            result = .failure(error)
        }
        try? await admin("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", on: server)
        return try result.get()
    }

    /// Runs one statement on `server`'s `postgres` database.
    public static func admin(_ sql: String, on server: StoreConfiguration = configuration(database: "postgres")) async throws {
        var maintenance = server
        maintenance.database = "postgres"
        try await maintenance.withTemporaryClient(logger: logger) { client in
            _ = try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        }
    }

    /// Every row of `tables` (all columns unless given), as sorted text: equal dumps mean equal data.
    public func dump(_ tables: [(table: String, columns: String)]) async throws -> [String: String] {
        var out: [String: String] = [:]
        for (table, columns) in tables {
            let sql = "SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '') FROM (SELECT \(columns) FROM \(table)) AS t"
            for try await text in try await client.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger).decode(String.self) {
                out[table] = text
            }
        }
        return out
    }

    /// Every table grant writes, every column.
    public static let allTables: [(table: String, columns: String)] = [
        "customers", "transactions", "subscriptions", "ownership_claims", "product_entitlements", "entitlements",
        "consumable_grants", "notifications", "consumption_requests", "entitlement_changes", "outbox", "schema_migrations",
    ].map { ($0, "*") }

    /// The state tables, without what depends on the order events arrived in (history, outbox,
    /// sequence counters, the notification log's outcomes and processing times, when a consumption
    /// request was recorded).
    public static let stateTables: [(table: String, columns: String)] = [
        ("customers", "environment, customer_id"),
        ("transactions", "*"),
        ("subscriptions", "*"),
        ("ownership_claims", "*"),
        ("entitlements", "*"),
        ("consumable_grants", "*"),
        ("consumption_requests", "environment, notification_uuid, bundle_id, transaction_id, original_transaction_id, reason, signed_date, deadline, status"),
        ("notifications", "environment, event_key, notification_type, subtype, signed_date"),
    ]

    /// Runs a query returning one integer.
    public func count(_ sql: String) async throws -> Int {
        var value = 0
        for try await v in try await client.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger).decode(Int.self) { value = v }
        return value
    }
}
