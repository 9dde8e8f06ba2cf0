import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import PostgresNIO
import Testing

@testable import EntitlementStore

/// How Postgres runs the store's statements once tables hold thousands of rows: every row of a
/// small batch found through its key's index, never by reading the whole table. A batch's work runs
/// inside `grant_load` and `grant_write` (migration 0004), whose statements EXPLAIN cannot reach, so
/// the proof for them is Postgres's own per-table counters: a batch applied against large tables
/// adds index scans and not one sequential scan.
@Suite("Store statements' query plans", .serialized, .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct StorePlanTests {
    /// A one-row batch with every member the statements below read.
    static let batch = #"""
        [{"e":"Sandbox","k":"2000000000000001","environment":"Sandbox","customerId":"6F9619FF-8B86-D011-B42D-00CF4FC964FF",
          "seq":3,"entitlementKey":"premium","sourceId":"2000000000000001"}]
        """#

    /// The tables a batch reads or writes.
    static let tables = [
        "notifications", "subscriptions", "entitlements", "consumable_grants", "transactions", "customers",
        "ownership_claims", "entitlement_changes", "outbox", "consumption_requests",
    ]

    /// The plan of `sql` for ``batch``, one line per node.
    static func plan(_ sql: String, _ db: ScratchDatabase) async throws -> String {
        var bindings = PostgresBindings()
        bindings.append(batch)
        let rows = try await db.client.query(PostgresQuery(unsafeSQL: "EXPLAIN " + sql, binds: bindings), logger: ScratchDatabase.logger)
        var lines: [String] = []
        for try await line in rows.decode(String.self) { lines.append(line) }
        return lines.joined(separator: "\n")
    }

    /// The generic plan of a prepared ``RowsStatement`` (the plan a prepared statement settles on,
    /// whatever rows it is given), one line per node.
    static func genericPlan<S: RowsStatement>(_ statement: S.Type, _ db: ScratchDatabase) async throws -> String {
        try await db.client.withConnection { connection in
            let types = S.columns.map { "\($0.type)[]" }.joined(separator: ", ")
            let empty = S.columns.map { _ in "'{}'" }.joined(separator: ", ")
            for sql in ["SET plan_cache_mode = force_generic_plan", "PREPARE probe(\(types)) AS \(PreparedRows<S>.sql)"] {
                _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: ScratchDatabase.logger).collect()
            }
            let rows = try await connection.query(PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE probe(\(empty))"), logger: ScratchDatabase.logger)
            var lines: [String] = []
            for try await line in rows.decode(String.self) { lines.append(line) }
            for sql in ["DEALLOCATE probe", "RESET plan_cache_mode"] {
                _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: ScratchDatabase.logger).collect()
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Sequential and index scans so far per table. The client must have one connection, the one
    /// that ran the work: its pending counters are flushed first.
    static func scans(_ db: ScratchDatabase) async throws -> [String: (seq: Int64, index: Int64)] {
        _ = try await db.client.query("SELECT pg_stat_force_next_flush()", logger: ScratchDatabase.logger).collect()
        let rows = try await db.client.query(
            "SELECT relname::text, seq_scan, coalesce(idx_scan, 0) FROM pg_stat_user_tables", logger: ScratchDatabase.logger)
        var out: [String: (seq: Int64, index: Int64)] = [:]
        for try await (table, seq, index) in rows.decode((String, Int64, Int64).self) { out[table] = (seq, index) }
        return out
    }

    /// Index entries read so far per table (all its indexes), and the rows it holds. Flushed like ``scans(_:)``.
    static func indexReads(_ db: ScratchDatabase) async throws -> [String: (read: Int64, rows: Int64)] {
        _ = try await db.client.query("SELECT pg_stat_force_next_flush()", logger: ScratchDatabase.logger).collect()
        let rows = try await db.client.query(
            """
            SELECT t.relname::text, coalesce(sum(i.idx_tup_read), 0)::bigint, t.n_live_tup
            FROM pg_stat_user_tables t LEFT JOIN pg_stat_user_indexes i ON i.relid = t.relid GROUP BY t.relname, t.n_live_tup
            """, logger: ScratchDatabase.logger)
        var out: [String: (read: Int64, rows: Int64)] = [:]
        for try await (table, read, live) in rows.decode((String, Int64, Int64).self) { out[table] = (read, live) }
        return out
    }

    /// Applies `events` as one batch and says which tables it scanned whole, which by index, and
    /// which read at least as many index entries as the table holds rows (an index that narrows
    /// by environment only, walked for every key).
    static func scansOfBatch(
        _ events: [EnrichedRecord], _ db: ScratchDatabase
    ) async throws -> (sequential: [String], indexed: Set<String>, wideIndexReads: [String]) {
        let before = try await scans(db)
        let readBefore = try await indexReads(db)
        try await applyAll(events, db.store, policy: generatorPolicy, batchSize: events.count)
        let after = try await scans(db)
        let readAfter = try await indexReads(db)
        let sequential = tables.filter { (after[$0]?.seq ?? 0) > (before[$0]?.seq ?? 0) }
        let indexed = Set(tables.filter { (after[$0]?.index ?? 0) > (before[$0]?.index ?? 0) })
        let wide = tables.filter { table in
            guard let end = readAfter[table], end.rows >= 100 else { return false }
            return end.read - (readBefore[table]?.read ?? 0) >= end.rows
        }
        return (sequential, indexed, wide)
    }

    /// One connection, so the counters read are the ones the batches' backend wrote.
    static var oneConnection: StoreConfiguration {
        var server = ScratchDatabase.configuration(database: "postgres")
        server.maximumConnections = 1
        return server
    }

    @Test("a batch against tables of thousands of rows reads every table through its key's index; applied events read only their dedupe rows")
    func keyedLookups() async throws {
        try await ScratchDatabase.with(on: Self.oneConnection) { db in
            try await db.store.syncProducts(LifecycleGenerator.catalog)
            let stream = try await offCooperativePool { LifecycleGenerator(seed: 7).stream(customers: 1_500) }
            let (early, late) = (Array(stream.dropLast(40)), Array(stream.suffix(40)))
            try await applyAll(early, db.store, policy: generatorPolicy, batchSize: 500)
            _ = try await db.client.query("ANALYZE", logger: ScratchDatabase.logger).collect()
            #expect(try await db.count("SELECT count(*) FROM customers") >= 1_400)

            // The control: with jsonb_array_elements' fixed estimate of 100 rows, the planner reads
            // the whole customers table for a one-row batch; so the data is large enough to tell.
            let control = """
                SELECT c.next_seq FROM customers c
                JOIN (SELECT r->>'environment' AS e, (r->>'customerId')::uuid AS k FROM jsonb_array_elements($1::text::jsonb) AS r) AS w
                  ON c.environment = w.e AND c.customer_id = w.k
                """
            #expect(try await Self.plan(control, db).contains("Seq Scan on customers"))

            let (sequential, indexed, wide) = try await Self.scansOfBatch(late, db)
            #expect(sequential.isEmpty, "the batch scanned whole tables: \(sequential)")
            #expect(wide.isEmpty, "the batch walked whole indexes of \(wide)")
            for table in ["notifications", "subscriptions", "entitlements", "transactions", "customers"] {
                #expect(indexed.contains(table), "the batch did not look \(table) up by index")
            }

            // The same events again: decided from their dedupe rows alone, so nothing else is read.
            let (again, readAgain, _) = try await Self.scansOfBatch(late, db)
            #expect(again.isEmpty && readAgain == ["notifications"], "a batch of applied events read \(readAgain), scanned \(again)")

            // The publisher's statement, planned as it runs: prepared once, its plan generic.
            let plan = try await Self.genericPlan(StoreStatements.DeletePublished.self, db)
            #expect(!plan.contains("Seq Scan") && plan.contains("Index") && plan.contains("outbox"), "DeletePublished:\n\(plan)")
        }
    }

    /// grant's statements are planned once per connection (migration 0008), so the plans here are
    /// the ones made while the tables were tiny.
    @Test("plans made while the tables were empty still find rows by key once they hold thousands of rows")
    func preparedOnEmptyTables() async throws {
        try await ScratchDatabase.with(on: Self.oneConnection) { db in
            try await db.store.syncProducts(LifecycleGenerator.catalog)
            // No statistics but the tables' sizes: an ANALYZE would make Postgres plan them again.
            for table in Self.tables {
                _ = try await db.client.query(
                    PostgresQuery(unsafeSQL: "ALTER TABLE \(table) SET (autovacuum_enabled = false)"), logger: ScratchDatabase.logger
                ).collect()
            }
            // One event per batch: grant_load's and grant_write's plans are made on tiny tables, on
            // the one connection every later batch uses.
            let early = LifecycleGenerator(seed: 31).stream(customers: 4)
            _ = try await applyAll(early, db.store, policy: generatorPolicy, batchSize: 1)
            try #require(early.count >= 6)
            let stream = try await offCooperativePool { LifecycleGenerator(seed: 37).stream(customers: 400) }
            try await applyAll(Array(stream.dropLast(40)), db.store, policy: generatorPolicy, batchSize: 500)

            let (sequential, indexed, wide) = try await Self.scansOfBatch(Array(stream.suffix(40)), db)
            #expect(sequential.isEmpty, "the batch scanned whole tables: \(sequential)")
            #expect(wide.isEmpty, "plans made on tiny tables walked whole indexes of \(wide)")
            for table in ["notifications", "subscriptions", "entitlements", "transactions", "customers"] {
                #expect(indexed.contains(table), "the batch did not look \(table) up by index")
            }
        }
    }
}
