import EntitlementStore
import Foundation
import GrantTestSupport
import PostgresNIO
import Testing

@Suite("Migrations against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct MigrationTests {
    private var migrations: [Migration] { get throws { try Migration.load(directory: ScratchDatabase.migrationsDirectory) } }
    /// The function files, which some migrations carry (`-- migrate: functions`).
    private var functions: [SchemaFunction] { get throws { try SchemaFunction.load(migrationsDirectory: ScratchDatabase.migrationsDirectory) } }

    @Test("migrations are applied in order, recorded with checksums, and not applied twice")
    func appliedAndRecorded() async throws {
        let migrations = try migrations
        let functions = try functions
        try await ScratchDatabase.with(migrate: false) { db in
            let applied = try await Migrator(migrations: migrations, functions: functions).migrate(client: db.client, logger: ScratchDatabase.logger)
            #expect(applied == migrations.map(\.version))
            let again = try await Migrator(migrations: migrations, functions: functions).migrate(client: db.client, logger: ScratchDatabase.logger)
            #expect(again.isEmpty)
            let recorded = try await db.dump([("schema_migrations", "version, name, checksum")])["schema_migrations"]
            // dump orders rows as text ("(10," before "(2,"), so the expected rows are ordered the same way.
            #expect(recorded == migrations.map { "(\($0.version),\($0.name),\($0.checksum))" }.sorted().joined(separator: "\n"))
            #expect(try await db.count("SELECT count(*) FROM information_schema.views WHERE table_name = 'current_entitlements'") == 1)
        }
    }

    @Test("concurrent starters wait for each other instead of racing")
    func concurrent() async throws {
        let migrations = try migrations
        let functions = try functions
        try await ScratchDatabase.with(migrate: false) { db in
            let results = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await Migrator(migrations: migrations, functions: functions).migrate(client: db.client, logger: ScratchDatabase.logger)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { !$0.isEmpty } == [migrations.map(\.version)])
            #expect(try await db.count("SELECT count(*) FROM schema_migrations") == migrations.count)
        }
    }

    @Test("a start is refused when an applied migration's file has changed")
    func changedFile() async throws {
        let migrations = try migrations
        try await ScratchDatabase.with { db in
            var edited = migrations
            edited[0] = Migration(version: edited[0].version, name: edited[0].name, sql: edited[0].sql + "\n-- edited\n")
            await #expect(throws: MigrationError.checksumMismatch(version: edited[0].version, name: edited[0].name)) {
                try await Migrator(migrations: edited).migrate(client: db.client, logger: ScratchDatabase.logger)
            }
            await #expect(throws: MigrationError.unknownApplied(version: migrations[0].version)) {
                try await Migrator(migrations: Array(migrations.dropFirst()) + [Migration(version: 9999, name: "9999_x", sql: "SELECT 1")])
                    .migrate(client: db.client, logger: ScratchDatabase.logger)
            }
        }
    }

    @Test("migration files are read in version order and bad names are refused")
    func loading() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mig-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "SELECT 2".write(toFile: dir + "/0002_second.sql", atomically: true, encoding: .utf8)
        try "SELECT 1".write(toFile: dir + "/0001_first.sql", atomically: true, encoding: .utf8)
        #expect(try Migration.load(directory: dir).map(\.version) == [1, 2])
        try "SELECT 3".write(toFile: dir + "/third.sql", atomically: true, encoding: .utf8)
        #expect(throws: MigrationError.badFileName("third.sql")) { try Migration.load(directory: dir) }
    }
}
