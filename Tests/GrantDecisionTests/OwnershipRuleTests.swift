import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import Testing

/// Who owns a purchase (``OwnershipClaim``), as a table: Apple's newest signed token wins whatever
/// the policy; uploads count only where Apple names nobody, by when ingest received them, under the
/// transfer policy; and every arrival order at grant ends with the same owner.
@Suite("Grant decision: who owns a purchase")
struct OwnershipRuleTests {
    static let refuse = testPolicy
    static let allow = GrantPolicy(catalog: testCatalog, expiryLeeway: 3600, transferPolicy: .allow)
    static let carol = UUID(uuidString: "CA201000-0000-4000-8000-000000000003")!

    private func subscription(customer: UUID?, id: String = "own-1") -> SimulatedPurchase {
        var sub = SimulatedPurchase(
            environment: .production, customer: customer, productType: .autoRenewableSubscription,
            productId: LifecycleGenerator.monthly, originalTransactionId: id, start: t0, uuidSeed: 41)
        sub.addTransaction(reason: .purchase)
        return sub
    }

    /// Applies `records` in every order; each ends with the same owner, the same claims (customer,
    /// evidence, status) and the same customers holding the same entitlements. Returns the first.
    private func everyOrder(_ records: [EnrichedRecord], policy: GrantPolicy) throws -> InMemoryLedger {
        var orders: [[EnrichedRecord]] = [[]]
        for record in records {
            orders = orders.flatMap { order in
                (0...order.count).map {
                    var o = order
                    o.insert(record, at: $0)
                    return o
                }
            }
        }
        func outcome(_ ledger: InMemoryLedger) -> [String] {
            let claims = ledger.purchases.values.flatMap { state in
                state.claims.map { "claim \($0.customerId) \($0.verified) \(state.status(of: $0, policy: policy.transferPolicy).rawValue)" }
            }
            let rows = ledger.entitlements.values.map { "row \($0.id.customer.customerId) \($0.id.entitlementKey) \($0.active)" }
            return (claims + rows).sorted()
        }
        var first: InMemoryLedger?
        for order in orders {
            var ledger = InMemoryLedger(policy: policy)
            for record in order { try ledger.apply(record) }
            if let first {
                #expect(outcome(ledger) == outcome(first), "order-dependent owner")
            } else {
                first = ledger
            }
        }
        return first!
    }

    private func owner(_ ledger: InMemoryLedger, policy: GrantPolicy, id: String = "own-1") -> UUID? {
        ledger.purchases.first { $0.key.purchaseId == id }?.value.owner(policy: policy.transferPolicy)
    }

    private func status(_ ledger: InMemoryLedger, _ customer: UUID, policy: GrantPolicy) -> OwnershipClaim.Status? {
        guard let state = ledger.purchases.values.first, let claim = state.claims.first(where: { $0.customerId == customer }) else { return nil }
        return state.status(of: claim, policy: policy.transferPolicy)
    }

    @Test("Apple re-assigns the token: the newest Apple-signed token owns the purchase under either policy, in every arrival order")
    func appleReassigns() throws {
        var sub = subscription(customer: alice)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(86_400)
        sub.reassignToken(to: bob)
        let moved = sub.notify(.didChangeRenewalPref)
        for policy in [Self.refuse, Self.allow] {
            let ledger = try everyOrder([buy, moved], policy: policy)
            #expect(owner(ledger, policy: policy) == bob)
            #expect(ledger.rows(source: "own-1").allSatisfy { $0.id.customer.customerId == bob && $0.active })
            #expect(status(ledger, alice, policy: policy) == .superseded)

            // In arrival order, the move is a change with its cause: alice's access ends as transferred, bob's begins.
            var inOrder = InMemoryLedger(policy: policy)
            try inOrder.apply(buy)
            let decision = try inOrder.apply(moved)
            #expect(
                Set(decision.changes.map { "\($0.kind.rawValue):\($0.customer.customerId == bob ? "bob" : "alice")" }) == [
                    "revoked:alice", "granted:bob",
                ])
            #expect(decision.changes.first { $0.customer.customerId == alice }?.reason == "transferred")
            #expect(decision.changes.allSatisfy { $0.cause.type == "DID_CHANGE_RENEWAL_PREF" })
            #expect(decision.note?.contains("owner changed") == true, "\(decision.note ?? "")")
        }
        // And back again: the newest word is alice's once more.
        sub.advance(86_400)
        sub.reassignToken(to: alice)
        let back = sub.notify(.didRenew)
        let ledger = try everyOrder([buy, moved, back], policy: Self.refuse)
        #expect(owner(ledger, policy: Self.refuse) == alice)
    }

    @Test("a late notification still carrying the replaced token does not take the purchase back")
    func lateOldToken() throws {
        var sub = subscription(customer: alice)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(600)
        // Signed while alice's token stood, delivered late (after Apple's retries): enrich fetched the history after the move.
        var late = sub.notify(.didChangeRenewalStatus, .autoRenewEnabled)
        sub.advance(3000)
        sub.reassignToken(to: bob)
        let moved = sub.notify(.didChangeRenewalPref)
        #expect(late.verified.transaction?.appAccountToken == alice)
        late.enrichment.appAccountToken = bob
        late.enrichment.fetchedAt = moved.enrichment.fetchedAt.addingTimeInterval(60)
        late.enrichment.history = moved.enrichment.history.map { tx in
            var tx = tx
            tx.signedDate = late.enrichment.fetchedAt
            return tx
        }
        let ledger = try everyOrder([buy, late, moved], policy: Self.refuse)
        #expect(owner(ledger, policy: Self.refuse) == bob)
        #expect(status(ledger, alice, policy: Self.refuse) == .superseded)
    }

    @Test("an upload never takes a purchase Apple's token names, under either policy, whichever arrives first")
    func uploadAgainstApple() throws {
        var sub = subscription(customer: alice)
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(600)
        // Bob uploads the purchase as his own; Apple's transaction names alice.
        let upload = sub.upload(hint: bob, userId: "bob@idp", authentication: .jwt)
        for policy in [Self.refuse, Self.allow] {
            let ledger = try everyOrder([buy, upload], policy: policy)
            #expect(owner(ledger, policy: policy) == alice)
            #expect(ledger.purchases.values.first?.claims.map(\.customerId) == [alice])
            #expect(ledger.rows(source: "own-1").allSatisfy { $0.id.customer.customerId == alice })
        }
        var ledger = InMemoryLedger(policy: Self.allow)
        try ledger.apply(buy)
        let decision = try ledger.apply(upload)
        #expect(decision.changes.isEmpty)
        #expect(decision.note?.contains("Apple's signed token names \(alice.uuidString.lowercased())") == true, "\(decision.note ?? "")")
    }

    @Test("where Apple names nobody, uploads rank by when ingest received them, not by the JWS's own dates; the policy decides")
    func uploadsByReceivedTime() throws {
        var sub = subscription(customer: nil)
        let oldCopy = sub.latest
        let buy = sub.notify(.subscribed, .initialBuy)
        sub.advance(600)
        var aliceUpload = sub.upload(hint: alice, userId: "alice@idp", authentication: .jwt)
        sub.advance(600)
        // Bob's copy was signed a month before alice's; he uploads it after her.
        var bobUpload = sub.upload(oldCopy, hint: bob, userId: "bob@idp", authentication: .hmac)
        #expect(bobUpload.verified.transaction!.signedDate! < aliceUpload.verified.transaction!.signedDate!)
        for policy in [Self.refuse, Self.allow] {
            let ledger = try everyOrder([buy, aliceUpload, bobUpload], policy: policy)
            let expected = policy.transferPolicy == .refuse ? alice : bob
            #expect(owner(ledger, policy: policy) == expected)
            #expect(ledger.rows(source: "own-1").allSatisfy { $0.id.customer.customerId == expected && $0.active })
            #expect(status(ledger, expected == alice ? bob : alice, policy: policy) == (policy.transferPolicy == .refuse ? .refused : .superseded))
        }
        // The ingested-at header, where the records carry it, is what ranks them.
        aliceUpload.verified.verifiedAt = t0
        bobUpload.verified.verifiedAt = t0
        var ledger = InMemoryLedger(policy: Self.refuse)
        for (record, ingested) in [(bobUpload, t0.addingTimeInterval(20)), (aliceUpload, t0.addingTimeInterval(10))] {
            var event = try GrantEvent(record)
            event.ingestedAt = ingested
            var snapshot = GrantSnapshot(alreadyApplied: false)
            snapshot.purchase = ledger.purchases.values.first
            let decision = try GrantDecider.decide(snapshot, event: event, policy: Self.refuse)
            ledger.purchases[event.purchaseKey!] = decision.purchase
        }
        #expect(owner(ledger, policy: Self.refuse) == alice)

        // Then Apple names carol (Set App Account Token): Apple's word outranks both uploads.
        sub.reassignToken(to: Self.carol)
        let named = sub.notify(.didChangeRenewalPref)
        let settled = try everyOrder([buy, aliceUpload, bobUpload, named], policy: Self.refuse)
        #expect(owner(settled, policy: Self.refuse) == Self.carol)
        #expect(status(settled, alice, policy: Self.refuse) == .refused)
    }

    @Test("an upload links its user only to the customer its credential maps to, and only when that customer owns the purchase")
    func externalUserLink() throws {
        // Mallory bought with the victim's token in the purchase and uploads it as herself.
        let mallory = CustomerIdentity.customer(forUser: "mallory@idp")
        var sub = subscription(customer: alice)
        let upload = sub.upload(hint: mallory, userId: "mallory@idp", authentication: .jwt)
        let event = try GrantEvent(upload)
        #expect(event.claim?.customerId == alice && event.claim?.verified == true)
        #expect(event.linkedUser(for: alice) == nil, "mallory is never recorded as alice's user")
        #expect(event.linkedUser(for: mallory) == "mallory@idp")
        // An open upload's body user is a claim, never recorded as anyone's user.
        let open = try GrantEvent(subscription(customer: nil).upload(hint: bob, userId: "bob", authentication: .open))
        #expect(open.externalUserId == nil && open.linkedUser(for: bob) == nil)
        _ = sub.notify(.didRenew)
    }
}
