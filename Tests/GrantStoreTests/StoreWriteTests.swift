import AppStore
import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import PostgresNIO
import Testing

/// What a batch writes, counted by Postgres itself (`pg_stat_user_tables`: rows inserted, updated
/// and deleted per table): an event that changes nothing writes its notifications row and nothing
/// else, a duplicate writes nothing, and a change writes the rows it changes.
@Suite("What the store writes", .serialized, .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct StoreWriteTests {
    /// Rows inserted, updated and deleted so far, per table. The client has one connection, the
    /// one that wrote: its pending counters are flushed first.
    static func writes(_ db: ScratchDatabase) async throws -> [String: [Int64]] {
        _ = try await db.client.query("SELECT pg_stat_force_next_flush()", logger: ScratchDatabase.logger).collect()
        let rows = try await db.client.query(
            "SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables", logger: ScratchDatabase.logger)
        var out: [String: [Int64]] = [:]
        for try await (table, ins, upd, del) in rows.decode((String, Int64, Int64, Int64).self) { out[table] = [ins, upd, del] }
        return out
    }

    /// The tables `records` wrote when applied as one batch: inserted, updated, deleted rows per table.
    static func written(_ records: [EnrichedRecord], _ db: ScratchDatabase) async throws -> [String: [Int64]] {
        let before = try await writes(db)
        try await applyAll(records, db.store, policy: generatorPolicy, batchSize: records.count)
        let after = try await writes(db)
        var delta: [String: [Int64]] = [:]
        for (table, counts) in after {
            let was = before[table] ?? [0, 0, 0]
            let d = zip(counts, was).map { $0 - $1 }
            if d.contains(where: { $0 != 0 }) { delta[table] = d }
        }
        return delta
    }

    /// One connection, so the counters read are the ones the batches' backend wrote.
    static var oneConnection: StoreConfiguration {
        var server = ScratchDatabase.configuration(database: "postgres")
        server.maximumConnections = 1
        return server
    }

    @Test("an event that changes nothing writes its notifications row and nothing else; a duplicate writes nothing")
    func noChangeWritesOnlyItsDedupeRow() async throws {
        let customer = UUID()
        var sub = SimulatedPurchase(
            customer: customer, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
            originalTransactionId: "quiet-1", start: Date().addingTimeInterval(-86_400), uuidSeed: 41)
        sub.addTransaction(reason: .purchase)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(600)
        let early = sub.notify(.didChangeRenewalPref)  // signed before the renewal, delivered after it
        sub.advance(3600)
        sub.addTransaction(reason: .renewal)
        let renewal = sub.notify(.didRenew)
        sub.advance(600)
        let declined = sub.notify(.refundDeclined)
        try await ScratchDatabase.with(on: Self.oneConnection) { db in
            try await applyAll([buy, renewal], db.store, policy: generatorPolicy)
            let dump = try await db.dump(ScratchDatabase.allTables)

            // Older than the applied state: stale, and every transaction it carries is stored already.
            let stale = try await Self.written([early], db)
            #expect(stale == ["notifications": [1, 0, 0]], "a stale event wrote \(stale)")
            // Recorded only (REFUND_DECLINED): its row, and the newer signed copies of the two
            // transactions its lookup returned (the table keeps each transaction's newest signed copy);
            // no purchase, entitlement, claim or customer row.
            let recorded = try await Self.written([declined], db)
            #expect(recorded == ["notifications": [1, 0, 0], "transactions": [0, 2, 0]], "a record-only event wrote \(recorded)")
            // Every one of them again, as after a consumer-group reset.
            let duplicates = try await Self.written([buy, early, renewal, declined], db)
            #expect(duplicates.isEmpty, "duplicates wrote \(duplicates)")

            let after = try await db.dump(ScratchDatabase.allTables)
            for (table, rows) in dump where table != "notifications" && table != "transactions" {
                #expect(after[table] == rows, "table \(table) changed")
            }
            #expect(try await db.count("SELECT count(*) FROM notifications WHERE outcome = 'stale'") == 1)
        }
    }

    @Test("a change writes the rows it changes: its purchase, entitlement, history, outbox, counter and new transaction")
    func changeWritesWhatChanged() async throws {
        let customer = UUID()
        var sub = SimulatedPurchase(
            customer: customer, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
            originalTransactionId: "busy-1", start: Date().addingTimeInterval(-86_400), uuidSeed: 43)
        sub.addTransaction(reason: .purchase)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(3600)
        sub.addTransaction(reason: .renewal)
        let renewal = sub.notify(.didRenew)
        try await ScratchDatabase.with(on: Self.oneConnection) { db in
            let first = try await Self.written([buy], db)
            #expect(first["customers"] == [1, 1, 0] && first["outbox"] == [1, 0, 0] && first["entitlement_changes"] == [1, 0, 0], "\(first)")
            #expect(
                first["ownership_claims"] == [1, 0, 0] && first["subscriptions"] == [1, 0, 0] && first["transactions"] == [1, 0, 0], "\(first)")
            #expect(first["entitlements"] == [1, 0, 0] && first["notifications"] == [1, 0, 0], "\(first)")
            // The renewal: a newer copy of the first transaction (history is signed when fetched) and
            // the new one; the purchase's state; the entitlement extended; one change.
            let second = try await Self.written([renewal], db)
            #expect(second["transactions"] == [1, 1, 0], "\(second)")
            #expect(second["subscriptions"] == [0, 1, 0] && second["entitlements"] == [0, 1, 0], "\(second)")
            #expect(second["entitlement_changes"] == [1, 0, 0] && second["outbox"] == [1, 0, 0] && second["customers"] == [0, 1, 0], "\(second)")
            #expect(second["ownership_claims"] == nil, "the claims did not change: \(second)")
            let seqs = try await db.dump([("outbox", "seq, (body::jsonb->>'seq')::bigint, body::jsonb->>'change'")])["outbox"]
            #expect(seqs == "(1,1,granted)\n(2,2,extended)")
        }
    }
}
