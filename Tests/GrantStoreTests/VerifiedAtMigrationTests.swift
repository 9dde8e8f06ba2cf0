import EntitlementStore
import Foundation
import GrantTestSupport
import PostgresNIO
import Testing

/// Migration 0024 renames `notifications.received_at` to `verified_at` in one step: rows written
/// before keep their moments under the new name, and the previous releases' calls of grant_write
/// keep writing, with no window between the rename and the functions that name the column (0024
/// carries functions/grant_write.sql: `-- migrate: functions grant_write`).
@Suite("notifications.verified_at migration against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct VerifiedAtMigrationTests {
    static let version = 24

    /// One notification row as a release that sends jsonb batches writes it (`receivedAt`: verify's moment).
    static func jsonbBatch(uuid: String, verifiedMs: Int64, ingestedMs: Int64) -> String {
        """
        {"notifications":[{"environment":"Sandbox","eventKey":"notification:\(uuid)","notificationUUID":"\(uuid)",\
        "kind":"notification","source":"apple-webhook","type":"DID_RENEW","originalTransactionId":"7001",\
        "signedDate":\(verifiedMs - 500),"receivedAt":\(verifiedMs),"ingestedAt":\(ingestedMs),"outcome":"recorded"}]}
        """
    }

    /// The columns of `notifications`, as text.
    static func columns(_ db: ScratchDatabase) async throws -> String {
        let table = "information_schema.columns WHERE table_name = 'notifications'"
        return try await db.dump([(table, "column_name, data_type, is_nullable, column_default")])[table] ?? ""
    }

    @Test("rows written before 0024 keep their moments under verified_at; grant_write (both overloads) writes on through and after it")
    func renamed() async throws {
        let migrations = try Migration.load(directory: ScratchDatabase.migrationsDirectory)
        let functions = try SchemaFunction.load(migrationsDirectory: ScratchDatabase.migrationsDirectory)
        #expect(migrations.contains { $0.version == Self.version })
        let logger = ScratchDatabase.logger
        try await ScratchDatabase.with(migrate: false) { db in
            // The database before 0024, written by the jsonb grant_write its migrations defined.
            try await Migrator(migrations: migrations.filter { $0.version < Self.version }).migrate(client: db.client, logger: logger)
            try await db.client.query(
                "SELECT grant_write(\(Self.jsonbBatch(uuid: "before", verifiedMs: 1_790_000_000_250, ingestedMs: 1_790_000_000_125))::jsonb)",
                logger: logger)
            #expect(try await db.count("SELECT count(*) FROM notifications WHERE received_at IS NOT NULL") == 1)

            // 0024 alone, with only the function file it carries: grant_write, which names verified_at,
            // defined and recorded in 0024's transaction; the function pass after it finds the file current.
            let carried = functions.filter { $0.name == "grant_write" }
            #expect(migrations.first { $0.version == Self.version }?.carriedFunctions == ["grant_write"])
            try await Migrator(migrations: migrations.filter { $0.version <= Self.version }, functions: carried)
                .migrate(client: db.client, logger: logger)
            let recorded = try await db.dump([("schema_functions", "name, checksum")])["schema_functions"]
            #expect(recorded == carried.map { "(\($0.name),\($0.checksum))" }.joined())
            let together = """
                SELECT count(*) FROM schema_functions f JOIN schema_migrations m ON m.applied_at = f.applied_at
                WHERE f.name = 'grant_write' AND m.version = \(Self.version)
                """
            #expect(try await db.count(together) == 1)
            try await db.client.query(
                "SELECT grant_write(\(Self.jsonbBatch(uuid: "between", verifiedMs: 1_790_000_001_250, ingestedMs: 1_790_000_001_125))::jsonb)",
                logger: logger)

            // Then everything, function files included.
            try await Migrator(migrations: migrations, functions: functions).migrate(client: db.client, logger: logger)
            try await db.client.query(
                "SELECT grant_write(\(Self.jsonbBatch(uuid: "after", verifiedMs: 1_790_000_002_250, ingestedMs: 1_790_000_002_125))::jsonb)",
                logger: logger)

            let rows = try await db.dump([
                (
                    "notifications",
                    "notification_uuid, (extract(epoch FROM verified_at) * 1000)::bigint, (extract(epoch FROM ingested_at) * 1000)::bigint"
                )
            ])["notifications"]
            #expect(
                rows == """
                    (after,1790000002250,1790000002125)
                    (before,1790000000250,1790000000125)
                    (between,1790000001250,1790000001125)
                    """)
            let received = try await db.count(
                "SELECT count(*) FROM information_schema.columns WHERE table_name = 'notifications' AND column_name = 'received_at'")
            #expect(received == 0)

            // The same columns as a database created with every migration at once.
            let migrated = try await Self.columns(db)
            let fresh = try await ScratchDatabase.with { try await Self.columns($0) }
            #expect(fresh == migrated)
        }
    }
}
