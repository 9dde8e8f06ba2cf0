import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PostgresNIO
import Testing

/// Migration 0021's roles (issue 28): grant's role changes rows and nothing else; the support role
/// reads. Each test logs in as its own members of the two group roles.
@Suite("Least privilege in the database", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct LeastPrivilegeTests {
    /// Runs `body` with a client logged in as a new login role that is a member of `group`.
    private func asMember<T: Sendable>(
        of group: String, in db: ScratchDatabase, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let login = "t_\(group)_\(UUID().uuidString.prefix(8).lowercased())"
        try await ScratchDatabase.admin("CREATE ROLE \(login) LOGIN IN ROLE \(group)")
        defer { Task { try? await ScratchDatabase.admin("DROP ROLE IF EXISTS \(login)") } }
        var configuration = db.configuration
        configuration.username = login
        configuration.password = nil
        return try await configuration.withTemporaryClient(logger: ScratchDatabase.logger, body)
    }

    /// The SQLSTATE a statement fails with, or nil when it succeeds.
    private func failure(_ sql: String, on client: PostgresClient) async -> String? {
        do {
            try await client.query(PostgresQuery(unsafeSQL: sql), logger: ScratchDatabase.logger)
            return nil
        } catch let error as PSQLError {
            return error.serverInfo?[.sqlState] ?? "\(error.code)"
        } catch {
            return "\(error)"
        }
    }

    @Test("grant's role applies a stream of lifecycles but cannot drop, truncate or alter a table, nor rewrite the migrations' or functions' records")
    func grantRole() async throws {
        try await ScratchDatabase.with { db in
            let records = LifecycleGenerator(seed: 21).stream(customers: 40)
            let (decisions, refused) = try await asMember(of: "appstore_grant", in: db) { client in
                let store = EntitlementStore(client: client, logger: ScratchDatabase.logger)
                let decisions = try await applyAll(records, store, policy: generatorPolicy)
                return (
                    decisions,
                    [
                        await failure("DROP TABLE entitlements", on: client), await failure("TRUNCATE notifications", on: client),
                        await failure("ALTER TABLE transactions ADD COLUMN x text", on: client),
                        await failure("CREATE TABLE mine (x int)", on: client),
                        await failure("DELETE FROM schema_migrations", on: client),
                        await failure("UPDATE schema_functions SET checksum = 'forged'", on: client),
                        await failure("CREATE OR REPLACE FUNCTION grant_write(batch jsonb) RETURNS integer LANGUAGE sql AS 'SELECT 0'", on: client),
                    ]
                )
            }
            #expect(decisions.count == records.count)
            #expect(try await db.count("SELECT count(*) FROM entitlements") > 0)
            #expect(refused.allSatisfy { $0 == "42501" }, "every one refused for lack of privilege: \(refused)")
        }
    }

    @Test("the support role reads every table and writes none")
    func supportRole() async throws {
        try await ScratchDatabase.with { db in
            try await applyAll(LifecycleGenerator(seed: 22).stream(customers: 10), db.store, policy: generatorPolicy)
            let (read, refused) = try await asMember(of: "appstore_support", in: db) { client in
                var rows = 0
                for try await n in try await client.query("SELECT count(*)::int FROM entitlements", logger: ScratchDatabase.logger).decode(Int.self) {
                    rows = n
                }
                return (
                    rows,
                    [
                        await failure("UPDATE entitlements SET active = false", on: client),
                        await failure("DELETE FROM customers", on: client),
                        await failure("INSERT INTO product_entitlements (product_id, entitlement_key) VALUES ('x', 'y')", on: client),
                    ]
                )
            }
            #expect(read > 0)
            #expect(refused.allSatisfy { $0 == "42501" }, "\(refused)")
        }
    }

    @Test("an owner without CREATEROLE migrates a new database once the roles exist (a managed database's administrator made them)")
    func ownerWithoutCreateRole() async throws {
        try await ScratchDatabase.with(migrate: false) { db in
            let owner = "t_owner_\(UUID().uuidString.prefix(8).lowercased())"
            // The roles exist in the cluster (a database migrated before, or the administrator).
            try await ScratchDatabase.with { _ in }
            try await ScratchDatabase.admin("CREATE ROLE \(owner) LOGIN NOCREATEROLE")
            try await ScratchDatabase.admin("ALTER DATABASE \(db.name) OWNER TO \(owner)")
            var configuration = db.configuration
            configuration.username = owner
            let applied = try await configuration.withTemporaryClient(logger: ScratchDatabase.logger) { client in
                try await Migrator(directory: ScratchDatabase.migrationsDirectory).migrate(client: client, logger: ScratchDatabase.logger)
            }
            #expect(applied.contains(21))
            try await ScratchDatabase.admin("DROP DATABASE IF EXISTS \(db.name) WITH (FORCE)")
            try await ScratchDatabase.admin("DROP ROLE IF EXISTS \(owner)")
        }
    }

    @Test("every PL/pgSQL function resolves names in its own schema; a new one that does not pin search_path is refused")
    func pinnedSearchPath() async throws {
        try await ScratchDatabase.with { db in
            let unpinned = try await db.count(
                """
                SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
                WHERE n.nspname = 'public' AND l.lanname = 'plpgsql'
                  AND NOT coalesce(p.proconfig, '{}') @> ARRAY['search_path=public, pg_temp']
                """)
            #expect(unpinned == 0)
            // grant_load's and grant_write's two signatures each (typed, and jsonb for the previous release), batch_rows.
            #expect(try await db.count("SELECT count(*) FROM pg_proc WHERE proname IN ('grant_load', 'grant_write', 'batch_rows')") == 5)
        }
        let replaced = Migration(
            version: 22, name: "0022_f", sql: "CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;")
        #expect(MigrationRules.problems(in: replaced).first?.contains("search_path") == true)
        let pinned = Migration(
            version: 22, name: "0022_f",
            sql: "CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE plpgsql SET search_path = public, pg_temp AS $$ BEGIN RETURN 1; END $$;")
        #expect(MigrationRules.problems(in: pinned).isEmpty)
    }
}
