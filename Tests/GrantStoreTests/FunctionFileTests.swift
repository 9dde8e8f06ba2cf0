import EntitlementStore
import Foundation
import GrantTestSupport
import PostgresNIO
import Testing

/// Each SQL function grant calls is defined in one file (schemas/migrations/functions), applied after
/// the migrations whenever the file changes, and nowhere else.
@Suite("Function files against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(10)))
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
}
