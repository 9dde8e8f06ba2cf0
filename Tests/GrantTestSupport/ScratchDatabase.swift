import EntitlementStore
import Foundation
import GrantDecision
import GrantWorkload
import Logging
import PostgresNIO
import TestSupport

/// A fresh database on the local Postgres (`deploy/local/up`), migrated with the repository's
/// `schemas/migrations`, with a running `PostgresClient`; dropped afterwards. Each test gets its
/// own, so tests run in parallel without seeing each other's rows.
public struct ScratchDatabase: Sendable {
    public let name: String
    public let configuration: StoreConfiguration
    public let client: PostgresClient
    public let store: EntitlementStore

    public static var host: String { LocalStack.value("POSTGRES_HOST", environment: "POSTGRES_HOST") }
    public static var port: Int { LocalStack.int("POSTGRES_PORT", environment: "POSTGRES_PORT") }

    /// The repository's migrations.
    public static let migrationsDirectory = TestServices.repositoryRoot.appendingPathComponent("schemas/migrations").path

    /// True when the local Postgres answers (or in CI, where a missing database must fail).
    public static var enabled: Bool {
        TestServices.isCI || TestServices.portOpen(host: host, port: UInt16(clamping: port))
    }

    public static func configuration(database: String) -> StoreConfiguration {
        StoreConfiguration(
            host: host, port: port, username: LocalStack.value("POSTGRES_USER", environment: "POSTGRES_USER"),
            password: ProcessInfo.processInfo.environment["POSTGRES_PASSWORD"], database: database, tls: .disable,
            maximumConnections: 8, migrate: true, migrationsDirectory: migrationsDirectory)
    }

    public static var logger: Logger { TestServices.logger }

    /// Creates, migrates and hands out a scratch database on `server` (its host, credentials, pool
    /// size and migrations; by default the local Postgres with the repository's migrations); drops
    /// it when `body` returns.
    public static func with<T: Sendable>(
        on server: StoreConfiguration = configuration(database: "postgres"), migrate: Bool = true,
        _ body: @Sendable (ScratchDatabase) async throws -> T
    ) async throws -> T {
        try await TemporaryDatabase.with(on: server, prefix: "grant_scratch", migrate: migrate, logger: logger) { name, database, client in
            try await body(
                ScratchDatabase(name: name, configuration: database, client: client, store: EntitlementStore(client: client, logger: logger)))
        }
    }

    /// Runs one statement on `server`'s `postgres` database.
    public static func admin(_ sql: String, on server: StoreConfiguration = configuration(database: "postgres")) async throws {
        try await TemporaryDatabase.admin(sql, on: server, logger: logger)
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
        "consumable_grants", "notifications", "consumption_requests", "entitlement_changes", "outbox", "schema_migrations", "consent_rescinds",
        "external_purchase_tokens",
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
        (
            "consumption_requests",
            "environment, notification_uuid, bundle_id, transaction_id, original_transaction_id, reason, signed_date, deadline, status"
        ),
        ("notifications", "environment, event_key, notification_type, subtype, signed_date"),
    ]

    /// Runs a query returning one integer.
    public func count(_ sql: String) async throws -> Int {
        var value = 0
        for try await v in try await client.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger).decode(Int.self) { value = v }
        return value
    }
}
