import EntitlementStore
import Foundation
import GrantTestSupport
import PostgresNIO
import Synchronization
import Testing

/// Migrations on a database grant is writing to (issue 28, docs/migrations.md): no blocking index
/// builds on existing tables, concurrent builds outside a transaction, and a lock timeout so a
/// migration queued behind a long transaction never holds grant's writes behind itself.
@Suite("Migrations on a live database")
struct LiveMigrationTests {
    private static let table = Migration(
        version: 21, name: "0021_items", sql: "CREATE TABLE items (id bigint PRIMARY KEY, code text);\nCREATE INDEX items_code ON items (code);")

    @Test("an index on an existing table must be built concurrently, outside a transaction; older files and new tables are exempt")
    func rules() {
        let blocking = Migration(version: 22, name: "0022_x", sql: "-- why\nCREATE INDEX items_by_code ON public.items (code);")
        #expect(MigrationRules.problems(in: blocking).count == 1)
        #expect(MigrationRules.problems(in: blocking).first?.contains("blocks every write to items") == true)
        let unique = Migration(version: 22, name: "0022_x", sql: "create unique index items_u on ONLY items(code)")
        #expect(MigrationRules.problems(in: unique).count == 1)
        let inTransaction = Migration(version: 22, name: "0022_x", sql: "CREATE INDEX CONCURRENTLY IF NOT EXISTS items_code ON items (code);")
        #expect(MigrationRules.problems(in: inTransaction).first?.contains("cannot run in a transaction") == true)
        let concurrent = Migration(version: 22, name: "0022_x", sql: "\(MigrationRules.noTransactionDirective)\n" + inTransaction.sql)
        #expect(!concurrent.transactional)
        #expect(MigrationRules.problems(in: concurrent).isEmpty)
        #expect(MigrationRules.problems(in: Self.table).isEmpty, "a table's own indexes block nothing: the table is new")
        let old = Migration(version: 20, name: "0020_x", sql: blocking.sql)
        #expect(MigrationRules.problems(in: old).isEmpty)
        // Loading refuses the file with its reason.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mig-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try? blocking.sql.write(toFile: dir + "/0022_x.sql", atomically: true, encoding: .utf8)
        #expect {
            try Migration.load(directory: dir)
        } throws: { error in
            guard case .unsafe(version: 22, name: "0022_x", let problems) = error as? MigrationError else { return false }
            return (error as? MigrationError)?.code == "migrate.unsafe" && problems.count == 1
        }
    }

    @Test("statements split at semicolons outside strings, quoted names, dollar quotes and comments")
    func splitting() {
        let sql = """
            -- migrate: no-transaction
            CREATE TABLE "a;b" (x text DEFAULT 'it''s; fine');
            /* a comment; with a semicolon */ CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$;
            -- a trailing comment; nothing
            SELECT $$;$$
            """
        let statements = SQLStatements.split(sql)
        #expect(statements.count == 3)
        #expect(statements[0].hasSuffix("DEFAULT 'it''s; fine')"))
        #expect(statements[1].hasSuffix("$body$ SELECT 1; $body$"))
        #expect(statements[2].hasPrefix("-- a trailing comment; nothing\nSELECT $$;$$"))
    }
}

@Suite("Migrations on a live database, against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct LiveMigrationDatabaseTests {
    private static let table = Migration(
        version: 21, name: "0021_items", sql: "CREATE TABLE items (id bigint PRIMARY KEY, code text);\nCREATE INDEX items_code ON items (code);")
    private static let concurrentIndex = Migration(
        version: 22, name: "0022_items_unique",
        sql: "\(MigrationRules.noTransactionDirective)\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS items_unique_code ON items (code);\n")

    @Test("a no-transaction migration builds its index concurrently and is recorded; one that failed halfway is rebuilt, not kept invalid")
    func concurrentBuild() async throws {
        try await ScratchDatabase.with(migrate: false) { db in
            let migrator = Migrator(migrations: [Self.table, Self.concurrentIndex], retryDelay: .milliseconds(10))
            try await Migrator(migrations: [Self.table]).migrate(client: db.client, logger: ScratchDatabase.logger)
            try await db.client.query("INSERT INTO items VALUES (1, 'a'), (2, 'a')", logger: ScratchDatabase.logger)
            // Duplicates: the unique build fails and leaves its index behind, invalid.
            await #expect(throws: MigrationError.self) { try await migrator.migrate(client: db.client, logger: ScratchDatabase.logger) }
            #expect(
                try await db.count(
                    "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'items_unique_code' AND NOT i.indisvalid"
                ) == 1)
            #expect(try await db.count("SELECT count(*) FROM schema_migrations WHERE version = 22") == 0)
            try await db.client.query("UPDATE items SET code = 'b' WHERE id = 2", logger: ScratchDatabase.logger)
            #expect(try await migrator.migrate(client: db.client, logger: ScratchDatabase.logger) == [22])
            #expect(
                try await db.count(
                    "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'items_unique_code' AND i.indisvalid")
                    == 1)
            #expect(try await db.count("SELECT count(*) FROM schema_migrations WHERE version = 22") == 1)
        }
    }

    @Test(
        "a migration queued behind a long transaction gives way after the lock timeout, so writers are not held behind it, and applies once the table is free"
    )
    func lockTimeoutLetsWritersThrough() async throws {
        try await ScratchDatabase.with(migrate: false) { db in
            try await Migrator(migrations: [Self.table]).migrate(client: db.client, logger: ScratchDatabase.logger)
            let alter = Migration(version: 22, name: "0022_items_note", sql: "ALTER TABLE items ADD COLUMN note text;")
            let migrator = Migrator(migrations: [Self.table, alter], lockTimeout: .milliseconds(300), attempts: 1000, retryDelay: .milliseconds(100))
            let writerDone = Flag()
            let readerOpen = Flag()
            let readerGaveUp = Flag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                // A long reader: holds ACCESS SHARE on items until a writer got through (or 60 s).
                group.addTask {
                    try await db.client.withTransaction(logger: ScratchDatabase.logger) { tx in
                        try await tx.query("SELECT count(*) FROM items", logger: ScratchDatabase.logger)
                        readerOpen.raise()
                        let deadline = ContinuousClock.now + .seconds(60)
                        while !writerDone.isRaised {
                            guard ContinuousClock.now < deadline else {
                                readerGaveUp.raise()
                                return
                            }
                            try await Task.sleep(for: .milliseconds(50))
                        }
                    }
                }
                while !readerOpen.isRaised { try await Task.sleep(for: .milliseconds(20)) }
                group.addTask { try await migrator.migrate(client: db.client, logger: ScratchDatabase.logger) }
                // Give the migration time to queue for its lock, then write as grant does.
                try await Task.sleep(for: .milliseconds(500))
                try await db.client.query("INSERT INTO items VALUES (10, 'w')", logger: ScratchDatabase.logger)
                #expect(!readerGaveUp.isRaised, "the write waited behind the migration until the reader ended")
                writerDone.raise()
                try await group.waitForAll()
            }
            #expect(try await db.count("SELECT count(*) FROM schema_migrations WHERE version = 22") == 1)
            #expect(try await db.count("SELECT count(*) FROM information_schema.columns WHERE table_name = 'items' AND column_name = 'note'") == 1)
        }
    }

    @Test("a migration that never gets its lock fails with migrate.lock_timeout after its attempts and is not recorded")
    func lockTimeoutGivesUp() async throws {
        try await ScratchDatabase.with(migrate: false) { db in
            try await Migrator(migrations: [Self.table]).migrate(client: db.client, logger: ScratchDatabase.logger)
            let alter = Migration(version: 22, name: "0022_items_note", sql: "ALTER TABLE items ADD COLUMN note text;")
            let migrator = Migrator(migrations: [Self.table, alter], lockTimeout: .milliseconds(200), attempts: 3, retryDelay: .milliseconds(50))
            let release = Flag()
            let held = Flag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await db.client.withTransaction(logger: ScratchDatabase.logger) { tx in
                        try await tx.query("LOCK TABLE items IN ACCESS SHARE MODE", logger: ScratchDatabase.logger)
                        held.raise()
                        // Released by the test, or after 10 minutes should the migration wait without a
                        // timeout (60 s was not enough for three 200 ms attempts on a loaded CI machine).
                        let deadline = ContinuousClock.now + .seconds(600)
                        while !release.isRaised, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
                    }
                }
                while !held.isRaised { try await Task.sleep(for: .milliseconds(20)) }
                await #expect(throws: MigrationError.lockTimeout(version: 22, name: "0022_items_note", attempts: 3)) {
                    try await migrator.migrate(client: db.client, logger: ScratchDatabase.logger)
                }
                release.raise()
                try await group.waitForAll()
            }
            #expect(try await db.count("SELECT count(*) FROM schema_migrations WHERE version = 22") == 0)
        }
    }
}

/// A flag one task raises and another watches.
private final class Flag: Sendable {
    private let value = Atomic(false)
    func raise() { value.store(true, ordering: .sequentiallyConsistent) }
    var isRaised: Bool { value.load(ordering: .sequentiallyConsistent) }
}
