import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import Testing

/// Refunds as Apple states them: a prorated refund of a consumable takes the refunded share of its
/// quantity, other products follow `revocationDate` unless the policy keeps access, and a reversed
/// refund gives back what the refund took.
@Suite("Grant decision: full, prorated and reversed refunds")
struct RefundRuleTests {
    static let keep = GrantPolicy(catalog: testCatalog, expiryLeeway: 3600, transferPolicy: .refuse, proratedRefund: .keep)

    func pack(_ quantity: Int32) -> SimulatedPurchase {
        var p = SimulatedPurchase(
            customer: alice, productType: .consumable, productId: LifecycleGenerator.coins, originalTransactionId: "coins-1", start: t0)
        p.quantity = quantity
        p.addTransaction(reason: .purchase)
        return p
    }

    func balance(_ ledger: InMemoryLedger) -> Int {
        ledger.consumables.values.filter(\.isGranted).map(\.quantity).reduce(0, +)
    }

    @Test("a prorated refund takes the refunded share of a consumable's quantity, rounded to the nearest unit; its reversal gives it back")
    func proratedConsumable() throws {
        var p = pack(10)
        var ledger = InMemoryLedger(policy: testPolicy)
        try ledger.apply(p.notify(.oneTimeCharge))
        #expect(balance(ledger) == 10)
        p.advance(3600)
        p.revokeLatest(.refundProrated, percentage: 25_000)  // 2.5 of 10: 3 taken (halves taken)
        let refund = try ledger.apply(p.notify(.refund))
        #expect(balance(ledger) == 7)
        #expect(refund.changes.map(\.kind) == [.consumableAdjusted])
        #expect(refund.changes.first?.quantity == 7)
        #expect(refund.changes.first?.reason == "partially_refunded")
        #expect(refund.note?.contains("3 of 10 taken") == true)
        p.advance(3600)
        p.revokeLatest(nil)
        let reversed = try ledger.apply(p.notify(.refundReversed))
        #expect(balance(ledger) == 10)
        #expect(reversed.changes.map(\.kind) == [.consumableAdjusted])
        #expect(reversed.changes.first?.quantity == 10)
        #expect(reversed.changes.first?.reason == "delivered")
    }

    @Test("rounding: 24.999 % of 10 takes 2, 33.333 % of 3 takes 1, 100 % or a prorated refund without a share takes all")
    func rounding() throws {
        for (quantity, share, kept) in [(10, 24_999, 8), (3, 33_333, 2), (3, 100_000, 0), (3, nil, 0), (1, 40_000, 1), (1, 50_000, 0)]
            as [(Int32, Int32?, Int)]
        {
            var p = pack(quantity)
            var ledger = InMemoryLedger(policy: testPolicy)
            try ledger.apply(p.notify(.oneTimeCharge))
            p.advance(60)
            p.revokeLatest(.refundProrated, percentage: share)
            let decision = try ledger.apply(p.notify(.refund))
            #expect(balance(ledger) == kept, "\(quantity) × \(share.map(String.init) ?? "none")")
            if kept == 0 { #expect(decision.changes.map(\.kind) == [.consumableRevoked]) }
        }
    }

    @Test("a full refund takes everything and its reversal restores it, whatever the quantity")
    func fullRefundOfPack() throws {
        var p = pack(5)
        var ledger = InMemoryLedger(policy: testPolicy)
        try ledger.apply(p.notify(.oneTimeCharge))
        p.advance(60)
        p.revokeLatest(.refundFull)
        #expect(try ledger.apply(p.notify(.refund)).changes.map(\.kind) == [.consumableRevoked])
        #expect(balance(ledger) == 0)
        p.advance(60)
        p.revokeLatest(nil)
        #expect(try ledger.apply(p.notify(.refundReversed)).changes.map(\.kind) == [.consumableGranted])
        #expect(balance(ledger) == 5)
    }

    @Test("a prorated refund of a subscription or non-consumable ends access by default and keeps it under GRANT_PRORATED_REFUND=keep")
    func proratedOtherProducts() throws {
        for policy in [testPolicy, Self.keep] {
            var sub = SimulatedPurchase(
                customer: alice, productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly,
                originalTransactionId: "sub-p", start: t0)
            sub.addTransaction(reason: .purchase)
            var life = SimulatedPurchase(
                customer: alice, productType: .nonConsumable, productId: LifecycleGenerator.lifetime, originalTransactionId: "nc-p", start: t0,
                uuidSeed: 2)
            life.addTransaction(reason: .purchase)
            var ledger = InMemoryLedger(policy: policy)
            try ledger.apply(sub.notify(.subscribed, .initialBuy))
            try ledger.apply(life.notify(.oneTimeCharge))
            sub.advance(86_400)
            life.advance(86_400)
            sub.revokeLatest(.refundProrated, percentage: 50_000)
            sub.status = .revoked
            life.revokeLatest(.refundProrated, percentage: 50_000)
            let subRefund = try ledger.apply(sub.notify(.refund))
            let lifeRefund = try ledger.apply(life.notify(.refund))
            let keeps = policy.proratedRefund == .keep
            #expect(ledger.rows(source: "sub-p").first?.active == keeps)
            #expect(ledger.rows(source: "nc-p").first?.active == keeps)
            #expect(subRefund.changes.map(\.kind) == (keeps ? [] : [.revoked]))
            #expect(lifeRefund.changes.map(\.kind) == (keeps ? [] : [.revoked]))
            #expect((lifeRefund.note?.contains("access kept by policy") ?? false) == keeps)
            // A full refund ends access under either policy.
            life.advance(60)
            life.revokeLatest(.refundFull)
            try ledger.apply(life.notify(.refund))
            #expect(ledger.rows(source: "nc-p").first?.active == false)
        }
    }
}
