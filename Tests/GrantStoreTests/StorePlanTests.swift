import Foundation
import GrantTestSupport
import PostgresNIO
import Testing

@testable import EntitlementStore

/// How Postgres runs the store's batch statements once tables hold a few thousand rows: every row of
/// a small batch found through its key's index, never by reading the whole table.
@Suite("Store statements' query plans", .serialized, .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(5)))
struct StorePlanTests {
    /// A one-row batch with every member the statements below read.
    static let batch = #"""
        [{"e":"Sandbox","k":"2000000000000001","environment":"Sandbox","customerId":"6F9619FF-8B86-D011-B42D-00CF4FC964FF",
          "nextSeq":3,"entitlementKey":"premium","sourceId":"2000000000000001"}]
        """#

    /// The plan of `sql` for ``batch``, one line per node.
    static func plan(_ sql: String, _ db: ScratchDatabase) async throws -> String {
        var bindings = PostgresBindings()
        bindings.append(batch)
        let rows = try await db.client.query(PostgresQuery(unsafeSQL: "EXPLAIN " + sql, binds: bindings), logger: ScratchDatabase.logger)
        var lines: [String] = []
        for try await line in rows.decode(String.self) { lines.append(line) }
        return lines.joined(separator: "\n")
    }

    @Test("a one-row batch is looked up by key in every table a batch reads or updates")
    func keyedLookups() async throws {
        try await ScratchDatabase.with { db in
            try await db.store.syncProducts(LifecycleGenerator.catalog)
            let stream = try await offCooperativePool { LifecycleGenerator(seed: 7).stream(customers: 1_500) }
            try await applyAll(stream, db.store, policy: generatorPolicy, batchSize: 500)
            _ = try await db.client.query("ANALYZE", logger: ScratchDatabase.logger).collect()
            #expect(try await db.count("SELECT count(*) FROM customers") >= 1_500)

            // The control: with jsonb_array_elements' fixed estimate of 100 rows, the planner reads
            // the whole customers table for this one-row batch; so the data is large enough to tell.
            let control = StoreStatements.lockSequences.replacingOccurrences(of: "batch_rows(", with: "jsonb_array_elements(")
            #expect(try await Self.plan(control, db).contains("Seq Scan on customers"))

            let statements: [(name: String, sql: String, table: String)] = [
                ("loadApplied", StoreStatements.loadApplied, "notifications"),
                ("loadPurchases", StoreStatements.loadPurchases, "subscriptions"),
                ("loadEntitlements", StoreStatements.loadEntitlements, "entitlements"),
                ("loadConsumables", StoreStatements.loadConsumables, "consumable_grants"),
                ("lockSequences", StoreStatements.lockSequences, "customers"),
                ("updateSequences", StoreStatements.updateSequences, "customers"),
                ("deleteEntitlements", StoreStatements.deleteEntitlements, "entitlements"),
                ("markPublished", StoreStatements.markPublished, "outbox"),
            ]
            for (name, sql, table) in statements {
                let plan = try await Self.plan(sql, db)
                #expect(!plan.contains("Seq Scan"), "\(name) scans a whole table:\n\(plan)")
                #expect(plan.contains("Index") && plan.contains(table), "\(name) finds its \(table) rows by index:\n\(plan)")
            }
        }
    }

    @Test("statements prepared while the tables were empty still find rows by key once they hold thousands of rows")
    func preparedOnEmptyTables() async throws {
        // One connection, so every batch runs on the connection where the statements were prepared.
        var server = ScratchDatabase.configuration(database: "postgres")
        server.maximumConnections = 1
        try await ScratchDatabase.with(on: server) { db in
            try await db.store.syncProducts(LifecycleGenerator.catalog)
            // No statistics but the tables' sizes: an ANALYZE would make Postgres plan them again.
            for table in ["notifications", "subscriptions", "customers"] {
                _ = try await db.client.query(
                    PostgresQuery(unsafeSQL: "ALTER TABLE \(table) SET (autovacuum_enabled = false)"), logger: ScratchDatabase.logger
                ).collect()
            }
            // One event per batch: each statement is prepared and run a dozen times on tiny tables,
            // where every index that leads with the environment looks as good as the key.
            let early = LifecycleGenerator(seed: 31).stream(customers: 4)
            _ = try await applyAll(early, db.store, policy: generatorPolicy, batchSize: 1)
            try #require(early.count >= 6)
            let later = try await offCooperativePool { LifecycleGenerator(seed: 37).stream(customers: 400) }
            try await applyAll(later, db.store, policy: generatorPolicy, batchSize: 500)

            let statements: [(name: String, index: String)] = [
                (PreparedBatch<StoreStatements.LoadApplied>.name, "notifications_pkey"),
                (PreparedBatch<StoreStatements.LoadPurchases>.name, "subscriptions_pkey"),
                (PreparedBatch<StoreStatements.LockSequences>.name, "customers_pkey"),
            ]
            for (name, index) in statements {
                let rows = try await db.client.query(
                    PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE \"\(name)\"('\(Self.batch.replacingOccurrences(of: "\n", with: " "))')"),
                    logger: ScratchDatabase.logger)
                var plan: [String] = []
                for try await line in rows.decode(String.self) { plan.append(line) }
                #expect(plan.joined().contains(index), "\(name) does not use \(index):\n\(plan.joined(separator: "\n"))")
            }
        }
    }
}
