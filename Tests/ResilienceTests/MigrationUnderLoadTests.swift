import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import Synchronization
import Testing

extension Resilience {
    /// Issue 28's migration under load: an index added, as docs/migrations.md says to add one, to a
    /// table of 10 M transactions while grant applies 100 events/s. A concurrent build never takes a
    /// lock grant's writes wait for; a plain `CREATE INDEX` would hold every write to the table for the
    /// whole build (what this test sees as grant's statements waiting on a lock). Among the resilience
    /// suites, alone: filling 10 M rows would slow every suite running beside it.
    @Suite("a migration under load, against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(30)))
    struct MigrationUnderLoadTests {
        /// `MIGRATION_LOAD_ROWS` (10,000,000) transactions in the table the index is built on.
        static let rows = Int(ProcessInfo.processInfo.environment["MIGRATION_LOAD_ROWS"] ?? "") ?? 10_000_000
        static let policy = GrantPolicy(catalog: LifecycleGenerator.catalog, expiryLeeway: 3600, transferPolicy: .refuse)

        @Test("an index added to a table of 10 M transactions while grant applies 100 events/s: no grant statement ever waits on a lock")
        func indexUnderLoad() async throws {
            let logger = ScratchDatabase.logger
            let records = LifecycleGenerator(seed: 28).stream(customers: 3_000)
            try await ScratchDatabase.with { db in
                try await db.store.syncProducts(LifecycleGenerator.catalog)
                let filled = ContinuousClock.now
                let inserted = try await db.count(
                    """
                    WITH inserted AS (
                        INSERT INTO transactions (environment, transaction_id, original_transaction_id, bundle_id, product_id,
                            product_type, purchase_date, signed_date, storefront, payload)
                        SELECT 'Production', (3000000000000000 + g)::text, (3000000000000000 + g / 5 * 5)::text, 'com.example.load',
                            'premium.monthly', 'Auto-Renewable Subscription', now() - (g % 100000) * interval '1 minute', now(),
                            (ARRAY['USA', 'FRA', 'JPN', 'DEU'])[1 + g % 4], '{}'::jsonb
                        FROM generate_series(1, \(Self.rows)) AS g
                        RETURNING 1)
                    SELECT count(*) FROM inserted
                    """)
                #expect(inserted == Self.rows)
                let fillTime = ContinuousClock.now - filled

                let repository = try Migrator(directory: ScratchDatabase.migrationsDirectory)
                let version = (repository.migrations.map(\.version).max() ?? 0) + 1
                let index = Migration(
                    version: version, name: String(format: "%04d_transactions_by_storefront", version),
                    sql: "\(MigrationRules.noTransactionDirective)\n"
                        + "CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_by_storefront ON transactions (storefront, environment);\n")
                let migrator = Migrator(migrations: repository.migrations + [index], functions: repository.functions)

                let seen = Observations()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    // Grant at 100 events/s: a batch of 10 every 100 ms, each timed, until the build ended.
                    group.addTask {
                        var next = 0
                        var tick = ContinuousClock.now
                        while !seen.migrationDone.load(ordering: .sequentiallyConsistent), next < records.count {
                            let events = try records[next..<min(next + 10, records.count)].map { try GrantEvent($0) }
                            let started = ContinuousClock.now
                            for result in try await db.store.apply(events, policy: Self.policy) { _ = try result.get() }
                            seen.latencies.withLock { $0.append(ContinuousClock.now - started) }
                            seen.applied.add(events.count, ordering: .relaxed)
                            next += events.count
                            tick = tick.advanced(by: .milliseconds(100))
                            try await Task.sleep(until: tick)
                        }
                    }
                    // Every 100 ms: how many of this database's statements wait on a lock (grant's, the
                    // migration's own waits for grant's transactions aside).
                    group.addTask {
                        while !seen.migrationDone.load(ordering: .sequentiallyConsistent) {
                            let waiting = try await db.count(
                                """
                                SELECT count(*) FROM pg_stat_activity
                                WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
                                  AND query NOT ILIKE '%CREATE INDEX%'
                                """)
                            seen.grantWaits.add(waiting, ordering: .relaxed)
                            try await Task.sleep(for: .milliseconds(100))
                        }
                    }
                    group.addTask {
                        defer { seen.migrationDone.store(true, ordering: .sequentiallyConsistent) }
                        // Grant has been writing for a while when the build starts.
                        try await Task.sleep(for: .seconds(2))
                        let started = ContinuousClock.now
                        #expect(try await migrator.migrate(client: db.client, logger: logger) == [version])
                        seen.migrationTime.withLock { $0 = ContinuousClock.now - started }
                    }
                    try await group.waitForAll()
                }
                #expect(
                    try await db.count(
                        "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'transactions_by_storefront' AND i.indisvalid"
                    ) == 1, "the index was built and is valid")
                let waits = seen.grantWaits.load(ordering: .relaxed)
                #expect(waits == 0, "grant's statements were seen waiting on a lock \(waits) times")
                let sorted = seen.latencies.withLock { $0 }.sorted()
                let appliedCount = seen.applied.load(ordering: .relaxed)
                #expect(appliedCount >= 100, "grant applied events all through the build (\(appliedCount))")
                print(
                    "migration under load: \(Self.rows) transactions filled in \(fillTime); the index built concurrently in \(seen.migrationTime.withLock { $0 }) "
                        + "while grant applied \(appliedCount) events in \(sorted.count) batches of 10 (100 events/s): batch p50 \(sorted[sorted.count / 2]), "
                        + "p99 \(sorted[sorted.count * 99 / 100]), max \(sorted.last!); grant's statements seen waiting on a lock: \(waits)"
                )
            }
        }
    }
}

/// What the test's tasks record while the build runs.
private final class Observations: Sendable {
    let migrationDone = Atomic<Bool>(false)
    /// Grant's statements seen waiting on a lock, summed over the samples.
    let grantWaits = Atomic<Int>(0)
    let latencies = Mutex<[Duration]>([])
    let applied = Atomic<Int>(0)
    let migrationTime = Mutex<Duration>(.zero)
}
