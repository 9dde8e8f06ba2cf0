import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import Testing

/// Group commit: the batches of many partition workers, handed in at once, share transactions and
/// still end exactly as if each had been applied alone.
@Suite("Merged transactions against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct TransactionMergerTests {
    /// 16 lanes (partitions), each with the whole lifecycles of its customers, in batches of 3.
    static func lanes(_ generator: LifecycleGenerator, customers: Int, lanes: Int) throws -> [[[GrantEvent]]] {
        var byLane = [[GrantEvent]](repeating: [], count: lanes)
        for index in 0..<customers {
            byLane[index % lanes] += try generator.lifecycle(index).map { try GrantEvent($0) }
        }
        return byLane.map { events in stride(from: 0, to: events.count, by: 3).map { Array(events[$0..<min($0 + 3, events.count)]) } }
    }

    @Test("batches handed in together share transactions, each gets its own decisions, and the data equals sequential batches")
    func mergedEqualsSequential() async throws {
        let generator = LifecycleGenerator(seed: 23)
        let lanes = try Self.lanes(generator, customers: 96, lanes: 16)
        let batches = lanes.reduce(0) { $0 + $1.count }
        let (merged, transactions) = try await ScratchDatabase.with { db in
            try await db.store.syncProducts(LifecycleGenerator.catalog)
            let merger = TransactionMerger(store: db.store, maximumConcurrentTransactions: 1)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in lanes {
                    group.addTask {
                        for batch in lane {
                            let decisions = try await merger.apply(batch, policy: generatorPolicy)
                            #expect(decisions.count == batch.count)
                            for (event, decision) in zip(batch, decisions) {
                                #expect(try decision.get().event.eventKey == event.eventKey)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            return (try await db.dump(ScratchDatabase.stateTables), merger.transactionCount)
        }
        let sequential = try await ScratchDatabase.with { db in
            try await db.store.syncProducts(LifecycleGenerator.catalog)
            for lane in lanes {
                for batch in lane { _ = try await db.store.apply(batch, policy: generatorPolicy) }
            }
            return try await db.dump(ScratchDatabase.stateTables)
        }
        #expect(transactions < batches / 2, "\(batches) batches took \(transactions) transactions")
        #expect(merged["entitlements"]?.isEmpty == false)
        for (table, rows) in sequential {
            #expect(merged[table] == rows, "\(table) differs between merged and sequential batches")
        }
    }

    /// Eight one-event batches handed in within a few milliseconds, as one fetch hands eight
    /// partitions their records: with a gather window they share one transaction. (Without one, the
    /// first two start transactions at once; how many of the others join them then depends on the
    /// machine's load, so that case is not asserted.)
    @Test("on an idle store, the batches arriving within the gather window share the first transaction")
    func gatherWindow() async throws {
        let generator = LifecycleGenerator(seed: 41)
        let batches = try (0..<8).map { [try GrantEvent(generator.lifecycle($0)[0])] }
        func transactions(window: Duration) async throws -> Int {
            try await ScratchDatabase.with { db in
                try await db.store.syncProducts(LifecycleGenerator.catalog)
                let merger = TransactionMerger(store: db.store, maximumConcurrentTransactions: 2, gatherWindow: window)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, batch) in batches.enumerated() {
                        group.addTask {
                            try await Task.sleep(for: .milliseconds(index))
                            #expect(try await merger.apply(batch, policy: generatorPolicy).allSatisfy { (try? $0.get()) != nil })
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await db.count("SELECT count(*) FROM notifications") == batches.count)
                return merger.transactionCount
            }
        }
        #expect(try await transactions(window: .milliseconds(500)) == 1)
    }

    @Test("a batch that Postgres refuses fails alone; the batches it shared a transaction with are applied")
    func poisonFailsAlone() async throws {
        let generator = LifecycleGenerator(seed: 29)
        let lanes = try Self.lanes(generator, customers: 24, lanes: 8)
        // A NUL character: valid Swift and JSON, but Postgres cannot hold it in jsonb text (22P05).
        var poisoned = lanes[0][0]
        poisoned[0].eventKey += "\u{0}"
        let poison = poisoned
        try await ScratchDatabase.with { db in
            try await db.store.syncProducts(LifecycleGenerator.catalog)
            let merger = TransactionMerger(store: db.store, maximumConcurrentTransactions: 1)
            let outcomes = await withTaskGroup(of: (Int, Result<Int, StoreError>).self) { group in
                for (index, batch) in ([poison] + lanes.dropFirst().map { $0[0] }).enumerated() {
                    group.addTask {
                        do throws(StoreError) {
                            return (index, .success(try await merger.apply(batch, policy: generatorPolicy).count))
                        } catch {
                            return (index, .failure(error))
                        }
                    }
                }
                var all: [Int: Result<Int, StoreError>] = [:]
                for await (index, outcome) in group { all[index] = outcome }
                return all
            }
            guard case .failure(let error)? = outcomes[0] else {
                Issue.record("the poisoned batch was applied: \(String(describing: outcomes[0]))")
                return
            }
            #expect(!error.isTransient && error.code.rawValue.hasPrefix("store.sql_"), "\(error)")
            for index in 1..<lanes.count {
                #expect((try? outcomes[index]?.get()) == lanes[index][0].count, "batch \(index): \(String(describing: outcomes[index]))")
            }
            let applied = try await db.count("SELECT count(*) FROM notifications")
            #expect(applied == lanes.dropFirst().reduce(0) { $0 + $1[0].count })
        }
    }
}
