import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import PostgresNIO
import Synchronization
import Testing

@testable import EntitlementStore

/// Applies records through the store in batches of `batchSize`; returns every decision.
@discardableResult
func applyAll(_ records: [EnrichedRecord], _ store: EntitlementStore, policy: GrantPolicy, batchSize: Int = 200) async throws -> [GrantDecision] {
    var decisions: [GrantDecision] = []
    var start = 0
    while start < records.count {
        let slice = records[start..<min(start + batchSize, records.count)]
        let events = try slice.map { try GrantEvent($0) }
        for result in try await store.apply(events, policy: policy) { decisions.append(try result.get()) }
        start += batchSize
    }
    return decisions
}

let generatorPolicy = GrantPolicy(catalog: LifecycleGenerator.catalog, expiryLeeway: 3600, transferPolicy: .refuse)

@Suite("Entitlement store against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct StoreTests {
    @Test("the same enriched stream applied twice gives the identical database")
    func appliedTwice() async throws {
        let records = LifecycleGenerator(seed: 11).stream(customers: 200)
        try await ScratchDatabase.with { db in
            try await db.store.syncProducts(LifecycleGenerator.catalog)
            let first = try await applyAll(records, db.store, policy: generatorPolicy, batchSize: 100)
            #expect(first.contains { !$0.changes.isEmpty })
            let before = try await db.dump(ScratchDatabase.allTables)
            // Replayed with other batch boundaries, as after a consumer-group offset reset.
            let second = try await applyAll(records, db.store, policy: generatorPolicy, batchSize: 37)
            #expect(second.allSatisfy { $0.outcome == .duplicate && $0.changes.isEmpty })
            let after = try await db.dump(ScratchDatabase.allTables)
            for (table, rows) in before { #expect(after[table] == rows, "table \(table) changed on replay") }
            #expect(try await db.count("SELECT count(*) FROM entitlements") > 0)
        }
    }

    @Test("1,000 customers' lifecycles shuffled (1,000 shuffles) end in the same state as in order")
    func shuffled() async throws {
        let (inOrder, shuffled) = try await offCooperativePool { () -> ([EnrichedRecord], [EnrichedRecord]) in
            let generator = LifecycleGenerator(seed: 2026)
            let lifecycles = (0..<1000).map { generator.lifecycle($0) }
            let inOrder = lifecycles.flatMap { $0 }.sorted {
                ($0.verified.notification?.signedDate ?? .distantPast, $0.verified.notificationUUID ?? "")
                    < ($1.verified.notification?.signedDate ?? .distantPast, $1.verified.notificationUUID ?? "")
            }
            var rng = SeededGenerator(seed: 99)
            var queues = lifecycles.map { $0.shuffled(using: &rng) }  // one shuffle per customer
            var shuffled: [EnrichedRecord] = []
            shuffled.reserveCapacity(inOrder.count)
            while !queues.isEmpty {  // and the customers interleaved at random
                let i = Int(rng.next() % UInt64(queues.count))
                shuffled.append(queues[i].removeFirst())
                if queues[i].isEmpty { queues.remove(at: i) }
            }
            return (inOrder, shuffled)
        }
        #expect(shuffled.count == inOrder.count && inOrder.count > 5000)
        let expected = try await ScratchDatabase.with { db in
            try await applyAll(inOrder, db.store, policy: generatorPolicy)
            return try await db.dump(ScratchDatabase.stateTables)
        }
        let shuffledRecords = shuffled
        let actual = try await ScratchDatabase.with { db in
            try await applyAll(shuffledRecords, db.store, policy: generatorPolicy)
            return try await db.dump(ScratchDatabase.stateTables)
        }
        for (table, rows) in expected {
            #expect(!rows.isEmpty || table == "consumption_requests", "table \(table) is empty")
            #expect(actual[table] == rows, "table \(table) differs between in-order and shuffled application")
        }
    }

    @Test("a customer who refunds loses the entitlement and regains it on refund reversal")
    func refundAndReversal() async throws {
        let customer = UUID()
        var sub = SimulatedPurchase(
            customer: customer, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
            originalTransactionId: "rr-1", start: Date().addingTimeInterval(-86_400), uuidSeed: 5)
        sub.addTransaction(reason: .purchase)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(3600)
        sub.revokeLatest(.refundFull)
        sub.status = .revoked
        let refund = sub.notify(.refund)
        sub.advance(3600)
        sub.revokeLatest(nil)
        sub.status = .active
        let reversal = sub.notify(.refundReversed)
        try await ScratchDatabase.with { db in
            let entitled = "SELECT count(*) FROM current_entitlements WHERE customer_id = '\(customer.uuidString)' AND entitlement_key = 'premium'"
            try await applyAll([buy], db.store, policy: generatorPolicy)
            #expect(try await db.count(entitled) == 1)
            try await applyAll([refund], db.store, policy: generatorPolicy)
            #expect(try await db.count(entitled) == 0)
            #expect(try await db.count("SELECT count(*) FROM entitlements WHERE reason = 'refunded' AND NOT active") == 1)
            try await applyAll([reversal], db.store, policy: generatorPolicy)
            #expect(try await db.count(entitled) == 1)
            let history = try await db.dump([("entitlement_changes", "seq, change, cause_type")])["entitlement_changes"]
            #expect(history == "(1,granted,SUBSCRIBED)\n(2,revoked,REFUND)\n(3,granted,REFUND_REVERSED)")
            #expect(try await db.count("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 3)
        }
    }

    @Test("an authenticated upload claiming someone else's purchase is refused and recorded; the owner's user stays linked")
    func secondClaimRefused() async throws {
        let owner = UUID()
        let intruder = UUID()
        let records = SimulatedPurchase.claimedByAnother(owner: owner, intruder: intruder, originalTransactionId: "claim-1", uuidSeed: 9)
        try await ScratchDatabase.with { db in
            let decisions = try await applyAll(records, db.store, policy: generatorPolicy)
            #expect(decisions[2].refusedClaims == [intruder])
            let claims = try await db.dump([("ownership_claims", "customer_id, status")])["ownership_claims"] ?? ""
            #expect(claims.contains("\(owner.uuidString.lowercased()),owner"))
            #expect(claims.contains("\(intruder.uuidString.lowercased()),refused"))
            #expect(try await db.count("SELECT count(*) FROM entitlements WHERE customer_id = '\(intruder.uuidString)'") == 0)
            #expect(try await db.count("SELECT count(*) FROM current_entitlements WHERE customer_id = '\(owner.uuidString)'") == 1)
            #expect(try await db.count("SELECT count(*) FROM notifications WHERE note LIKE '%refused%'") == 1)
            #expect(try await db.count("SELECT count(*) FROM subscriptions WHERE owner_customer_id = '\(owner.uuidString)'") == 1)
            let users = try await db.dump([("customers", "customer_id, external_user_id")])["customers"] ?? ""
            #expect(users.contains("(\(owner.uuidString.lowercased()),owner-user)"), "\(users)")
            #expect(!users.contains("intruder-user"), "a refused claim links no user: \(users)")
        }
    }

    @Test("Apple re-assigning a purchase's token moves it: the old claim superseded, the change published with its cause")
    func appleReassignsInStore() async throws {
        let first = UUID()
        let second = UUID()
        var sub = SimulatedPurchase(
            customer: first, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
            originalTransactionId: "claim-2", start: Date().addingTimeInterval(-3600), uuidSeed: 19)
        sub.addTransaction(reason: .purchase)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(600)
        sub.reassignToken(to: second)
        let moved = sub.notify(.didChangeRenewalPref)
        try await ScratchDatabase.with { db in
            try await applyAll([buy, moved], db.store, policy: generatorPolicy)
            let claims = try await db.dump([("ownership_claims", "customer_id, status, verified")])["ownership_claims"] ?? ""
            #expect(claims.contains("\(second.uuidString.lowercased()),owner,t"), "\(claims)")
            #expect(claims.contains("\(first.uuidString.lowercased()),superseded,t"), "\(claims)")
            #expect(try await db.count("SELECT count(*) FROM current_entitlements WHERE customer_id = '\(first.uuidString)'") == 0)
            #expect(try await db.count("SELECT count(*) FROM current_entitlements WHERE customer_id = '\(second.uuidString)'") == 1)
            #expect(
                try await db.count(
                    "SELECT count(*) FROM entitlement_changes WHERE customer_id = '\(first.uuidString)' AND reason = 'transferred' AND cause_type = 'DID_CHANGE_RENEWAL_PREF'"
                ) == 1)
            #expect(try await db.count("SELECT count(*) FROM outbox WHERE customer_id = '\(second.uuidString)'") == 1)
            #expect(try await db.count("SELECT count(*) FROM notifications WHERE note LIKE '%owner changed%'") == 1)
        }
    }

    @Test(
        "a notification naming only an app transaction (RESCIND_CONSENT) finds the customer by the appTransactionId Apple signed into their purchases, consumables too"
    )
    func appTransactionFindsCustomer() async throws {
        let subscriber = UUID()
        let buyer = UUID()
        var sub = SimulatedPurchase(
            customer: subscriber, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
            originalTransactionId: "apptx-1", start: Date().addingTimeInterval(-3600), uuidSeed: 23)
        sub.appTransactionId = "704000000000000001"
        sub.addTransaction(reason: .purchase)
        let buy = sub.notify(.subscribed, .initialBuy)
        var coins = SimulatedPurchase(
            customer: buyer, productType: .consumable, productId: "com.example.coins", originalTransactionId: "apptx-2",
            start: Date().addingTimeInterval(-3600), uuidSeed: 24)
        coins.appTransactionId = "704000000000000002"
        coins.addTransaction(reason: .purchase)
        let charge = coins.notify(.oneTimeCharge)
        sub.advance(600)
        coins.advance(600)
        var stranger = SimulatedPurchase(
            customer: nil, productType: .nonConsumable, productId: "com.example.lifetime", originalTransactionId: "apptx-3",
            start: Date().addingTimeInterval(-3600), uuidSeed: 25)
        stranger.appTransactionId = "704000000000000003"
        let rescinded = [sub.rescindConsent(), coins.rescindConsent(), stranger.rescindConsent()]
        try await ScratchDatabase.with { db in
            try await applyAll([buy, charge], db.store, policy: generatorPolicy)
            let before = try await db.dump([("current_entitlements", "customer_id, entitlement_key")])
            let decisions = try await applyAll(rescinded, db.store, policy: generatorPolicy)
            #expect(decisions.map(\.outcome) == [.recorded, .recorded, .recorded])
            #expect(decisions[0].event.appTransactionCustomer == subscriber)
            #expect(decisions[0].note?.contains("app transaction 704000000000000001 is customer \(subscriber.uuidString.lowercased())'s") == true)
            #expect(decisions[1].event.appTransactionCustomer == buyer)
            #expect(decisions[2].event.appTransactionCustomer == nil)
            #expect(decisions[2].note?.contains("no customer known for app transaction 704000000000000003") == true)
            #expect(try await db.count("SELECT count(*) FROM notifications WHERE note LIKE '%is customer%'") == 2)
            #expect(try await db.dump([("current_entitlements", "customer_id, entitlement_key")]) == before, "no purchase changes")
        }
    }

    @Test("a prorated refund leaves the unrefunded share of a consumable in consumable_balances; its reversal gives the pack back")
    func proratedConsumableBalance() async throws {
        let buyer = UUID()
        var coins = SimulatedPurchase(
            customer: buyer, productType: .consumable, productId: "com.example.coins", originalTransactionId: "prorated-1",
            start: Date().addingTimeInterval(-3600), uuidSeed: 26)
        coins.quantity = 10
        coins.addTransaction(reason: .purchase)
        let charge = coins.notify(.oneTimeCharge)
        coins.advance(600)
        coins.revokeLatest(.refundProrated, percentage: 30_000)
        let refund = coins.notify(.refund)
        coins.advance(600)
        coins.revokeLatest(nil)
        let reversal = coins.notify(.refundReversed)
        try await ScratchDatabase.with { db in
            func balance() async throws -> Int {
                try await db.count("SELECT coalesce(sum(quantity), 0)::int FROM consumable_balances WHERE customer_id = '\(buyer.uuidString)'")
            }
            try await applyAll([charge], db.store, policy: generatorPolicy)
            #expect(try await balance() == 10)
            try await applyAll([refund], db.store, policy: generatorPolicy)
            #expect(try await balance() == 7)
            #expect(try await db.count("SELECT count(*) FROM entitlement_changes WHERE change = 'consumable_adjusted' AND quantity = 7") == 1)
            try await applyAll([reversal], db.store, policy: generatorPolicy)
            #expect(try await balance() == 10)
        }
    }

    @Test("a customer's external user ID is written once: a later upload naming another user does not change it")
    func externalUserIdWrittenOnce() async throws {
        let customer = UUID()
        var sub = SimulatedPurchase(
            customer: nil, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
            originalTransactionId: "link-1", start: Date().addingTimeInterval(-3600), uuidSeed: 21)
        sub.addTransaction(reason: .purchase)
        let first = sub.upload(hint: customer, userId: "user-first", authentication: .jwt)
        sub.advance(600)
        let second = sub.upload(hint: customer, userId: "user-second", authentication: .jwt)
        sub.advance(600)
        let open = sub.upload(hint: UUID(), userId: "user-open", authentication: .open)
        sub.advance(600)
        let third = sub.upload(hint: customer, userId: "user-third", authentication: .hmac)
        try await ScratchDatabase.with { db in
            // In one batch and across batches, the first link stands.
            try await applyAll([first, second], db.store, policy: generatorPolicy, batchSize: 2)
            try await applyAll([third], db.store, policy: generatorPolicy)
            let decisions = try await applyAll([open], db.store, policy: generatorPolicy)
            let customers = try await db.dump([("customers", "customer_id, external_user_id")])["customers"] ?? ""
            #expect(customers == "(\(customer.uuidString.lowercased()),user-first)")
            #expect(decisions[0].event.claim == nil)
            let notes = try await db.dump([("notifications", "event_key, outcome, note")])["notifications"] ?? ""
            #expect(try await db.count("SELECT count(*) FROM notifications WHERE note LIKE 'upload hints not counted%'") == 1, "\(notes)")
            #expect(try await db.count("SELECT count(*) FROM subscriptions WHERE owner_customer_id = '\(customer.uuidString)'") == 1)
        }
    }

    @Test("outbox sequence numbers are gap-free per customer and match the change history")
    func outboxSequences() async throws {
        let records = LifecycleGenerator(seed: 5).stream(customers: 100)
        try await ScratchDatabase.with { db in
            try await applyAll(records, db.store, policy: generatorPolicy, batchSize: 50)
            let gaps = try await db.count(
                """
                SELECT count(*) FROM (SELECT customer_id, count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM outbox
                GROUP BY environment, customer_id) s WHERE lo <> 1 OR hi <> n
                """)
            #expect(gaps == 0)
            #expect(try await db.count("SELECT count(*) FROM outbox") == (try await db.count("SELECT count(*) FROM entitlement_changes")))
            #expect(
                try await db.count(
                    "SELECT count(*) FROM customers c WHERE next_seq <> 1 + (SELECT count(*) FROM outbox o WHERE o.customer_id = c.customer_id)") == 0
            )
            // While another publisher (a replica) holds the lock, a round hands out nothing.
            let held = try await db.client.withTransaction(logger: ScratchDatabase.logger) { connection in
                _ = try await connection.query("SELECT pg_advisory_xact_lock(\(EntitlementStore.outboxLockKey))", logger: ScratchDatabase.logger)
                    .collect()
                return try await db.store.publishOutbox(limit: 333) { _ in Issue.record("rows handed out under another's lock") }
            }
            #expect(held == nil)
            // A round whose publish fails deletes nothing: every row is handed out again.
            let waiting = try await db.count("SELECT count(*) FROM outbox")
            struct BrokerDown: Error {}
            await #expect(throws: StoreError.self) { try await db.store.publishOutbox(limit: 333) { _ in throw BrokerDown() } }
            #expect(try await db.count("SELECT count(*) FROM outbox") == waiting)
            let box = Mutex<[OutboxEntry]>([])
            while let n = try await db.store.publishOutbox(limit: 333, { entries in box.withLock { $0 += entries } }), n > 0 {}
            #expect(try await db.store.publishOutbox(limit: 333) { _ in Issue.record("an empty outbox handed out rows") } == 0)
            let published = box.withLock { $0 }
            // Each change once, and the outbox keeps nothing published (the history does).
            #expect(published.count == waiting && Set(published).count == waiting)
            #expect(try await db.count("SELECT count(*) FROM outbox") == 0)
            #expect(try await db.count("SELECT count(*) FROM entitlement_changes") == waiting)
            let first = try #require(published.first)
            let body = try JSONDecoder().decode(ChangeEventProbe.self, from: Data(first.body.utf8))
            #expect(first.subject == .customer(body.customerId, seq: body.seq))
        }
    }
}

private struct ChangeEventProbe: Decodable {
    var seq: Int64
    var customerId: UUID
}
