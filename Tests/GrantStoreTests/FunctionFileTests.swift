import EntitlementStore
import Foundation
import GrantTestSupport
import PostgresNIO
import Testing

/// Each SQL function grant calls is defined in one file (schemas/migrations/functions), applied after
/// the migrations whenever the file changes, and nowhere else.
@Suite("Function files against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct FunctionFileTests {
    private var functions: [SchemaFunction] {
        get throws { try SchemaFunction.load(migrationsDirectory: ScratchDatabase.migrationsDirectory) }
    }

    private func recorded(_ db: ScratchDatabase) async throws -> [String: String] {
        var rows: [String: String] = [:]
        for try await (name, checksum) in try await db.client.query("SELECT name, checksum FROM schema_functions", logger: ScratchDatabase.logger)
            .decode((String, String).self)
        {
            rows[name] = checksum
        }
        return rows
    }

    @Test("every function file is applied after the migrations, recorded by checksum, and run again only when it changes")
    func appliedOncePerChange() async throws {
        let functions = try functions
        #expect(Set(functions.map(\.name)).isSuperset(of: ["grant_load", "grant_write", "batch_rows", "ms_to_timestamptz"]))
        try await ScratchDatabase.with(migrate: false) { db in
            let migrator = try Migrator(directory: ScratchDatabase.migrationsDirectory)
            try await migrator.migrate(client: db.client, logger: ScratchDatabase.logger)
            #expect(try await recorded(db) == Dictionary(uniqueKeysWithValues: functions.map { ($0.name, $0.checksum) }))
            // What the database runs is what the files say, settings included.
            for name in ["grant_load", "grant_write", "batch_rows"] {
                let pinned = try await db.count(
                    "SELECT count(*) FROM pg_proc WHERE proname = '\(name)' AND 'search_path=public, pg_temp' = ANY(proconfig)")
                #expect(pinned >= 1, "\(name) runs without its pinned search_path")
            }
            let stamps = [("schema_functions", "name, applied_at")]
            let before = try await db.dump(stamps)
            try await migrator.migrate(client: db.client, logger: ScratchDatabase.logger)
            #expect(try await db.dump(stamps) == before, "an unchanged file ran again")

            // A changed file runs again: here batch_rows gains a comment in its body's header.
            let index = try #require(functions.firstIndex { $0.name == "batch_rows" })
            var edited = functions
            edited[index] = SchemaFunction(name: "batch_rows", sql: "COMMENT ON FUNCTION batch_rows(jsonb) IS 'edited';\n" + functions[index].sql)
            try await Migrator(migrations: migrator.migrations, functions: edited).migrate(client: db.client, logger: ScratchDatabase.logger)
            #expect(try await recorded(db)["batch_rows"] == edited[index].checksum)
            #expect(
                try await db.count(
                    "SELECT count(*) FROM pg_description d JOIN pg_proc p ON p.oid = d.objoid WHERE p.proname = 'batch_rows' AND d.description = 'edited'"
                ) == 1)
        }
    }

    @Test("a function file that defines anything but its own function, or PL/pgSQL with an open search_path, is refused")
    func refusesOtherStatements() throws {
        #expect(try functions.allSatisfy { $0.problems.isEmpty })
        let body = "RETURNS integer LANGUAGE plpgsql SET search_path = public, pg_temp AS $$ BEGIN RETURN 1; END $$"
        #expect(SchemaFunction(name: "f", sql: "CREATE OR REPLACE FUNCTION f() \(body);").problems.isEmpty)
        #expect(!SchemaFunction(name: "f", sql: "CREATE OR REPLACE FUNCTION f() \(body);\nDROP TABLE customers;").problems.isEmpty)
        #expect(!SchemaFunction(name: "f", sql: "CREATE OR REPLACE FUNCTION g() \(body);").problems.isEmpty)
        #expect(!SchemaFunction(name: "f", sql: "CREATE FUNCTION f() \(body);").problems.isEmpty)
        let open = "CREATE OR REPLACE FUNCTION f() RETURNS integer LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;"
        #expect(SchemaFunction(name: "f", sql: open).problems.contains { $0.contains("search_path") })
        #expect(!SchemaFunction(name: "f", sql: "-- nothing here\n").problems.isEmpty)
    }

    @Test("a migration that carries a function file defines it and records its checksum in the migration's transaction, or neither")
    func carriedByMigration() async throws {
        let functions = try functions
        let migrations = try Migration.load(directory: ScratchDatabase.migrationsDirectory)
        #expect(migrations.first { $0.version == 24 }?.carriedFunctions == ["grant_write"])
        let index = try #require(functions.firstIndex { $0.name == "batch_rows" })
        let carried = SchemaFunction(name: "batch_rows", sql: "COMMENT ON FUNCTION batch_rows(jsonb) IS 'carried';\n" + functions[index].sql)
        var files = functions
        files[index] = carried
        let edited = files
        let broken = SchemaFunction(name: "broken", sql: "CREATE OR REPLACE FUNCTION broken() RETURNS no_such_type LANGUAGE sql AS $$ SELECT 1 $$;")
        let statement = "COMMENT ON TABLE customers IS 'carried';"
        let carrying = Migration(version: 9001, name: "9001_carry", sql: "-- migrate: functions batch_rows\n" + statement)
        let failing = Migration(version: 9001, name: "9001_carry", sql: "-- migrate: functions batch_rows, broken\n" + statement)
        let logger = ScratchDatabase.logger
        try await ScratchDatabase.with { db in
            let before = try await recorded(db)
            // A migrator without the file refuses before running anything.
            await #expect(throws: MigrationError.unknownFunction(version: 9001, name: "9001_carry", function: "batch_rows")) {
                try await Migrator(migrations: migrations + [carrying]).migrate(client: db.client, logger: logger)
            }
            // The second carried file fails after the migration's statement and the first file ran: none of it stays.
            await #expect {
                try await Migrator(migrations: migrations + [failing], functions: edited + [broken]).migrate(client: db.client, logger: logger)
            } throws: { ($0 as? MigrationError)?.code == "migrate.failed" }
            #expect(try await recorded(db) == before)
            #expect(try await db.count("SELECT count(*) FROM pg_description WHERE description = 'carried'") == 0)
            #expect(try await db.count("SELECT count(*) FROM schema_migrations WHERE version = 9001") == 0)

            let applied = try await Migrator(migrations: migrations + [carrying], functions: edited).migrate(client: db.client, logger: logger)
            #expect(applied == [9001])
            #expect(try await recorded(db)["batch_rows"] == carried.checksum)
            #expect(
                try await db.count(
                    "SELECT count(*) FROM pg_description d JOIN pg_proc p ON p.oid = d.objoid WHERE p.proname = 'batch_rows' AND d.description = 'carried'"
                ) == 1)
            // Recorded in the migration's transaction (now() is when it began), and not run again by the function pass after it.
            let together = """
                SELECT count(*) FROM schema_functions f JOIN schema_migrations m ON m.applied_at = f.applied_at
                WHERE f.name = 'batch_rows' AND m.version = 9001
                """
            #expect(try await db.count(together) == 1)
        }
    }

    @Test("a functions directive is refused in a no-transaction file, below the first lines, misspelt, or naming no file")
    func refusesBadDirectives() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mig-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir + "/functions", withIntermediateDirectories: true)
        let body = "RETURNS integer LANGUAGE plpgsql SET search_path = public, pg_temp AS $$ BEGIN RETURN 1; END $$"
        try "CREATE OR REPLACE FUNCTION f() \(body);".write(toFile: dir + "/functions/f.sql", atomically: true, encoding: .utf8)
        func load(_ sql: String) throws(MigrationError) -> [Migration] {
            try? sql.write(toFile: dir + "/0030_x.sql", atomically: true, encoding: .utf8)
            return try Migration.load(directory: dir)
        }
        func refusal(_ sql: String) -> MigrationError? {
            do {
                _ = try load(sql)
                return nil
            } catch { return error }
        }
        #expect(try load("-- migrate: functions f\nSELECT 1;").first?.carriedFunctions == ["f"])
        #expect(try load("-- migrate: functions f\n-- why\nSELECT 1;").first?.transactional == true)
        #expect(refusal("-- migrate: functions f g\nSELECT 1;") == .unknownFunction(version: 30, name: "0030_x", function: "g"))
        let bad: [(sql: String, reason: String)] = [
            ("-- migrate: no-transaction\n-- migrate: functions f\nCREATE INDEX CONCURRENTLY IF NOT EXISTS i ON t (c);", "cannot carry functions"),
            ("-- migrate: functions f\n-- migrate: no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS i ON t (c);", "cannot carry functions"),
            ("-- why\n-- migrate: functions f\nSELECT 1;", "first lines"),
            ("-- migrate: function f\nSELECT 1;", "is not a directive"),
            ("-- migrate: functions\nSELECT 1;", "names no function"),
            ("-- migrate: functions f f\nSELECT 1;", "twice"),
        ]
        for (sql, reason) in bad {
            guard case .badDirective(30, "0030_x", let problems) = refusal(sql) else {
                Issue.record("not refused as a bad directive: \(sql)")
                continue
            }
            #expect(problems.contains { $0.contains(reason) }, "\(problems)")
            #expect(refusal(sql)?.code == "migrate.bad_directive")
        }
        // A copy of a function that has its file is refused: the migration names the file instead.
        guard case .unsafe(30, "0030_x", let problems) = refusal("CREATE OR REPLACE FUNCTION public.f() \(body);") else {
            Issue.record("a copied definition was not refused")
            return
        }
        #expect(problems.contains { $0.contains("-- migrate: functions f") })
    }
}
