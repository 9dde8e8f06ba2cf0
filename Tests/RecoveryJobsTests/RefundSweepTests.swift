import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Foundation
import GrantTestSupport
import KafkaClient
import PipelineRecords
import PostgresNIO
import RecoveryJobs
import StageRuntime
import TestSupport
import Testing

/// The refund sweep against grant's schema and the simulated Apple: it finds refunds whose
/// notification never came, keeps Apple's revision so the next run asks only for what is new, and
/// feeds only what grant does not know.
@Suite("refund sweep against grant's schema and the simulated Apple", .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled))
struct RefundSweepTests {
    /// A purchase grant holds for `customer`: its transaction row and the owner claim.
    static func insertPurchase(
        _ db: ScratchDatabase, id: String, customer: UUID, purchased: Date, revoked: Date? = nil, percentage: Int32? = nil
    ) async throws {
        try await db.client.query(
            """
            INSERT INTO transactions (environment, transaction_id, original_transaction_id, bundle_id, product_id, purchase_date,
                revocation_date, revocation_percentage, payload)
            VALUES ('Sandbox', \(id), \(id), \(SimFixture.bundleId), 'com.example.lifetime', \(purchased), \(revoked), \(percentage), '{}'::jsonb)
            """, logger: ScratchDatabase.logger)
        try await db.client.query(
            """
            INSERT INTO ownership_claims (environment, original_transaction_id, customer_id, first_claimed_at, verified, status, cause_event_key)
            VALUES ('Sandbox', \(id), \(customer.uuidString)::uuid, \(purchased), true, 'owner', \("notification:" + id))
            """, logger: ScratchDatabase.logger)
    }

    @Test("a refund grant never heard of is fed once; the second sweep asks only for what is new and feeds nothing; a new refund is found next")
    func sweepKeepsRevision() async throws {
        try await ScratchDatabase.with { db in
            try await RunningSimulator.with { sim in
                let customer = UUID()
                let other = UUID()
                let day: TimeInterval = 86_400
                let now = SimFixture.now()
                // Apple: three purchases of one customer, one of them refunded (no REFUND reached grant),
                // one refunded and known to grant already; and another customer with nothing refunded.
                func bought(_ id: String, _ daysAgo: Double, revoked: Date? = nil) -> JWSTransactionDecodedPayload {
                    SimFixture.transaction(
                        original: id, id: id, purchased: now - daysAgo * day, type: .nonConsumable, token: customer, product: "com.example.lifetime",
                        revoked: revoked)
                }
                let knownRefund = now - 5 * day
                try sim.apple.store.upsert(
                    [bought("7001", 40), bought("7002", 30, revoked: now - 2 * day), bought("7003", 20, revoked: knownRefund)], customerID: "a")
                try sim.apple.store.upsert([bought("7101", 10)], customerID: "b")
                try await Self.insertPurchase(db, id: "7001", customer: customer, purchased: now - 40 * day)
                try await Self.insertPurchase(db, id: "7002", customer: customer, purchased: now - 30 * day)
                try await Self.insertPurchase(db, id: "7003", customer: customer, purchased: now - 20 * day, revoked: knownRefund)
                try await Self.insertPurchase(db, id: "7101", customer: other, purchased: now - 10 * day)

                let sweep = RefundSweep(database: db.client, logger: ScratchDatabase.logger)
                let customers = try await sweep.customers(bundleId: SimFixture.bundleId)
                #expect(Set(customers.map(\.customerId)) == [customer.uuidString.lowercased(), other.uuidString.lowercased()])
                #expect(customers.allSatisfy { $0.revision == nil })
                #expect(
                    try await sweep.customers(bundleId: SimFixture.bundleId, since: now - 15 * day).map(\.customerId) == [
                        other.uuidString.lowercased()
                    ])
                #expect(try await sweep.customers(bundleId: "com.example.unknown").isEmpty)

                let verified = try await TestServices.makeTopic("refund-sweep-verified", partitions: 2)
                let producer = try TestServices.makeProducer()
                let first = await sweep.sweep(customers, client: sim.client, producer: producer, verifiedTopic: verified)
                #expect(first.allSatisfy { $0.failure == nil })
                #expect(first.map(\.listed).reduce(0, +) == 2)
                #expect(first.flatMap(\.fed) == ["7002"], "the refund grant knew is not fed again")
                let records = try await TopicReader.read(verified) { $0.count >= 1 }
                #expect(records.compactMap(\.keyString) == ["Sandbox:7002"])
                let record = try VerifiedRecord.decode(try #require(records.first).value)
                #expect(record.source == PipelineHeader.Source.refundHistory)
                #expect(record.transaction?.revocationDate != nil)
                #expect(try await sim.client.verifier.verifyTransaction(try #require(record.signedTransaction)) == record.transaction)

                // Run again at once: one request per customer, no refund listed, nothing fed.
                let before = sim.apple.faults.statistics
                let again = await sweep.sweep(
                    try await sweep.customers(bundleId: SimFixture.bundleId), client: sim.client, producer: producer, verifiedTopic: verified)
                let after = sim.apple.faults.statistics
                #expect(after.byEndpoint["refund_history", default: 0] - before.byEndpoint["refund_history", default: 0] == 2)
                #expect(after.refundsReturned == before.refundsReturned)
                #expect(again.allSatisfy { $0.failure == nil && $0.listed == 0 && $0.fed.isEmpty })

                // A refund made since: the next sweep lists it alone.
                _ = sim.apple.store.modifyTransaction("7001") {
                    $0.revocationDate = now - 0.5 * day
                    $0.revocationReason = .refundedDueToIssue
                    $0.revocationType = .refundFull
                }
                let third = await sweep.sweep(
                    try await sweep.customers(bundleId: SimFixture.bundleId), client: sim.client, producer: producer, verifiedTopic: verified)
                await producer.close()
                #expect(third.map(\.listed).reduce(0, +) == 1)
                #expect(third.flatMap(\.fed) == ["7001"])
                let revisions = try await db.client.query(
                    "SELECT count(*)::int, sum(refunds_seen)::int FROM refund_sweeps", logger: ScratchDatabase.logger)
                for try await (rows, seen) in revisions.decode((Int, Int).self) {
                    #expect(rows == 2)
                    #expect(seen == 3)
                }
            }
        }
    }

    @Test("a dry run asks Apple but keeps no revision; an answer Apple refuses is reported and the customer asked again next time")
    func dryRunAndFailure() async throws {
        try await ScratchDatabase.with { db in
            try await RunningSimulator.with { sim in
                let customer = UUID()
                let now = SimFixture.now()
                try sim.apple.store.upsert(
                    [SimFixture.transaction(original: "7201", id: "7201", purchased: now - 86_400, type: .nonConsumable, revoked: now - 3600)],
                    customerID: "c")
                try await Self.insertPurchase(db, id: "7201", customer: customer, purchased: now - 86_400)
                // Grant also knows a purchase Apple does not (say, from another account's data): Apple answers 404.
                try await Self.insertPurchase(db, id: "7299", customer: UUID(), purchased: now - 86_400)
                let sweep = RefundSweep(database: db.client, logger: ScratchDatabase.logger)
                let dry = await sweep.sweep(try await sweep.customers(), client: sim.client, producer: nil)
                #expect(dry.map(\.listed).sorted() == [0, 1])
                #expect(dry.allSatisfy { $0.fed.isEmpty })
                #expect(dry.filter { $0.failure != nil }.count == 1)
                #expect(try await sweep.customers().allSatisfy { $0.revision == nil }, "a dry run keeps nothing")
                #expect(dry.first { $0.failure != nil }?.failure?.contains("apple_api.4040010") == true)
            }
        }
    }
}
