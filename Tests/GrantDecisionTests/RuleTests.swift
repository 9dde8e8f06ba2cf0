import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import Testing

@Suite("Grant decision: ordering, idempotency, leeway, isolation")
struct RuleTests {
    private func subscription(customer: UUID? = alice, env: AppStoreEnvironment = .production) -> SimulatedPurchase {
        var sub = SimulatedPurchase(
            environment: env, customer: customer, productType: .autoRenewableSubscription,
            productId: LifecycleGenerator.monthly, originalTransactionId: "sub-1", start: t0, uuidSeed: 3)
        sub.addTransaction(reason: .purchase)
        return sub
    }

    @Test("the same event twice changes nothing the second time")
    func duplicate() throws {
        var sub = subscription()
        let record = sub.notify(.subscribed, .initialBuy)
        var ledger = InMemoryLedger(policy: testPolicy)
        let first = try ledger.apply(record)
        let before = ledger
        let second = try ledger.apply(record)
        #expect(first.changes.count == 1)
        #expect(second.outcome == .duplicate)
        #expect(second.changes.isEmpty)
        #expect(ledger.purchases == before.purchases && ledger.entitlements == before.entitlements)
    }

    @Test("an older event arriving late cannot move the state backwards")
    func staleEvent() throws {
        var sub = subscription()
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(3600)
        sub.revokeLatest(.refundFull)
        sub.status = .revoked
        let refund = sub.notify(.refund)
        var ledger = InMemoryLedger(policy: testPolicy)
        try ledger.apply(refund)
        let late = try ledger.apply(buy)
        #expect(late.outcome == .stale)
        #expect(late.changes.isEmpty)
        #expect(ledger.purchases.values.first?.lifecycle == .revoked)
        #expect(ledger.rows(source: "sub-1").allSatisfy { !$0.active })
    }

    /// Issue 28's clock-skew case: enrich replicas disagree about the time, Apple does not.
    @Test("a refund enriched by an instance whose clock runs 120 s behind another's still revokes, in either order")
    func skewedEnrichClock() throws {
        var sub = subscription()
        // Enriched by an instance 120 s fast: its fetchedAt is in the future, Apple's signatures are not.
        var buy = sub.notify(.subscribed, .initialBuy)
        buy.enrichment.fetchedAt = buy.enrichment.fetchedAt.addingTimeInterval(120)
        sub.advance(30)
        sub.revokeLatest(.refundFull)
        sub.status = .revoked
        // The partition moved to an instance with the right clock: its fetchedAt is older than the purchase's.
        let refund = sub.notify(.refund)
        #expect(refund.enrichment.fetchedAt < buy.enrichment.fetchedAt)
        for order in [[buy, refund], [refund, buy]] {
            var ledger = InMemoryLedger(policy: testPolicy)
            for record in order { try ledger.apply(record) }
            #expect(ledger.purchases.values.first?.lifecycle == .revoked)
            #expect(ledger.rows(source: "sub-1").allSatisfy { !$0.active })
        }
    }

    @Test("a newer snapshot wins whichever notification carried it")
    func newerSnapshotWins() throws {
        var sub = subscription()
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(3600)
        sub.autoRenew = false
        // An old notification (signed before the auto-renew change) enriched after it: its
        // enrichment already says auto-renew is off.
        var lateEnriched = sub.notify(.offerRedeemed, fetchDelay: 10)
        lateEnriched.verified.notification?.signedDate = t0
        var ledger = InMemoryLedger(policy: testPolicy)
        try ledger.apply(buy)
        let decision = try ledger.apply(lateEnriched)
        #expect(decision.outcome == .applied)
        #expect(ledger.purchases.values.first?.autoRenewEnabled == false)
        #expect(decision.changes.map(\.kind) == [.shortened])
    }

    @Test("access runs on for the leeway past expiresDate only while a renewal is expected")
    func leeway() throws {
        var sub = subscription()
        var ledger = InMemoryLedger(policy: GrantPolicy(catalog: testCatalog, expiryLeeway: 7200))
        try ledger.apply(sub.notify(.subscribed, .initialBuy))
        let expires = try #require(sub.latest?.expiresDate)
        #expect(ledger.rows(source: "sub-1").first?.activeUntil == expires.addingTimeInterval(7200))
        sub.advance(60)
        sub.autoRenew = false
        try ledger.apply(sub.notify(.didChangeRenewalStatus, .autoRenewDisabled))
        #expect(ledger.rows(source: "sub-1").first?.activeUntil == expires)
        sub.advance(60)
        sub.autoRenew = true
        sub.billingRetry = true
        sub.status = .billingRetry
        try ledger.apply(sub.notify(.didFailToRenew))
        let row = try #require(ledger.rows(source: "sub-1").first)
        #expect(!row.active && row.activeUntil == expires)
    }

    @Test("Sandbox and Production purchases with the same ids never mix")
    func environments() throws {
        var prod = subscription(env: .production)
        var sandbox = subscription(env: .sandbox)
        var ledger = InMemoryLedger(policy: testPolicy)
        try ledger.apply(prod.notify(.subscribed, .initialBuy))
        sandbox.revokeLatest(.refundFull)
        sandbox.status = .revoked
        try ledger.apply(sandbox.notify(.refund))
        #expect(ledger.purchases.count == 2)
        let prodRow = try #require(ledger.entitlements.values.first { $0.id.customer.environment == "Production" })
        let sandboxRow = try #require(ledger.entitlements.values.first { $0.id.customer.environment == "Sandbox" })
        #expect(prodRow.active && !sandboxRow.active)
    }

    @Test("an unmapped product grants the entitlement named by its product ID")
    func unmappedProduct() throws {
        var p = SimulatedPurchase(
            customer: alice, productType: .nonConsumable, productId: "new.unmapped.pack",
            originalTransactionId: "nc-9", start: t0)
        p.addTransaction(reason: .purchase)
        var ledger = InMemoryLedger(policy: testPolicy)
        let d = try ledger.apply(p.notify(.oneTimeCharge))
        #expect(d.changes.map(\.entitlementKey) == ["new.unmapped.pack"])
    }

    @Test("events that can never apply are rejected with a stable code")
    func rejections() throws {
        var p = SimulatedPurchase(
            customer: alice, productType: .nonRenewingSubscription, productId: "unknown.season",
            originalTransactionId: "nr-1", start: t0)
        p.addTransaction(reason: .purchase)
        var ledger = InMemoryLedger(policy: testPolicy)
        #expect(throws: GrantRejection.self) { try ledger.apply(p.notify(.oneTimeCharge)) }
        do {
            try ledger.apply(p.notify(.oneTimeCharge))
        } catch let rejection as GrantRejection {
            #expect(rejection.code.rawValue == "grant.non_renewing_duration_unknown")
        }
        var noUUID = p.notify(.oneTimeCharge)
        noUUID.verified.notificationUUID = nil
        noUUID.verified.notification?.notificationUUID = nil
        #expect(
            throws: GrantRejection(
                code: .missingNotificationUUID, message: "the notification has no notificationUUID, so it cannot be deduplicated")
        ) {
            _ = try GrantEvent(noUUID)
        }
        var mismatch = p.notify(.oneTimeCharge)
        mismatch.verified.transaction?.environment = .sandbox
        #expect(throws: GrantRejection.self) { _ = try GrantEvent(mismatch) }
    }

    @Test("a purchase without any customer grants nothing until one is named")
    func pendingOwner() throws {
        var sub = subscription(customer: nil)
        var ledger = InMemoryLedger(policy: testPolicy)
        let d = try ledger.apply(sub.notify(.subscribed, .initialBuy))
        #expect(d.changes.isEmpty && ledger.entitlements.isEmpty)
        sub.advance(60)
        sub.customer = alice
        let named = try ledger.apply(sub.notify(.didChangeRenewalStatus, .autoRenewEnabled))
        #expect(named.changes.map(\.kind) == [.granted])
    }

    @Test("1,000 generated lifecycles end in the same state in order and shuffled (in memory)")
    func shuffledLifecycles() throws {
        let generator = LifecycleGenerator(seed: 42)
        let policy = GrantPolicy(catalog: LifecycleGenerator.catalog)
        var inOrder = InMemoryLedger(policy: policy)
        var shuffled = InMemoryLedger(policy: policy)
        var rng = SeededGenerator(seed: 7)
        var total = 0
        for index in 0..<1000 {
            let events = generator.lifecycle(index)
            total += events.count
            for e in events { try inOrder.apply(e) }
            for e in events.shuffled(using: &rng) { try shuffled.apply(e) }
        }
        #expect(total > 5000)
        #expect(inOrder.purchases == shuffled.purchases)
        #expect(inOrder.entitlements == shuffled.entitlements)
        #expect(inOrder.consumables == shuffled.consumables)
    }

    @Test("a consumable is its own purchase: keyed by its transactionId, stored under the name originalTransactionId")
    func consumablePurchaseKey() throws {
        var coins = SimulatedPurchase(
            customer: alice, productType: .consumable, productId: "com.example.coins", originalTransactionId: "coin-1", start: t0,
            uuidSeed: 5)
        coins.addTransaction(reason: .purchase)
        // A consumable is never restored nor renewed: Apple's originalTransactionId is its transactionId.
        let transaction = try #require(coins.latest)
        #expect(transaction.originalTransactionId == transaction.transactionId)
        let event = try GrantEvent(coins.notify(.oneTimeCharge))
        #expect(event.purchaseKey == PurchaseKey(environment: "Production", purchaseId: "coin-1"))

        // A purchase's state is stored as JSON that grant_write and earlier releases read
        // (`state->'key'->>'originalTransactionId'`): the member keeps Apple's name.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let key = PurchaseKey(environment: "Sandbox", purchaseId: "2000")
        let json = String(decoding: try encoder.encode(key), as: UTF8.self)
        #expect(json == #"{"environment":"Sandbox","originalTransactionId":"2000"}"#)
        #expect(try JSONDecoder().decode(PurchaseKey.self, from: Data(json.utf8)) == key)
    }
}
