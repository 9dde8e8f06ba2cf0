import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import Testing

/// How far grant believes what an app says about its own uploads: an upload names its buyer only
/// when ingest authenticated the user, or, with uploads deliberately open, in test environments.
@Suite("Grant decision: upload hints count only as far as they are authenticated")
struct UploadTrustTests {
    /// A purchase whose transactions carry no `appAccountToken`: only the app's uploads name a buyer.
    private func purchase(_ env: AppStoreEnvironment) -> (purchase: SimulatedPurchase, original: JWSTransactionDecodedPayload) {
        var sub = SimulatedPurchase(
            environment: env, customer: nil, productType: .autoRenewableSubscription,
            productId: LifecycleGenerator.monthly, originalTransactionId: "upload-1", start: t0, uuidSeed: 11)
        sub.addTransaction(reason: .purchase)
        let original = sub.latest!
        sub.advance(30 * 86_400)
        sub.addTransaction(reason: .renewal)
        return (sub, original)
    }

    @Test("an older transaction JWS uploaded without authentication does not take a Production purchase from its owner")
    func ownershipAttack() throws {
        let (sub, original) = purchase(.production)
        let owner = sub.upload(hint: alice, userId: "alice@idp", authentication: .jwt)
        // The attacker's copy was signed a month earlier, so under "earliest claim wins" it would own the purchase.
        let attack = sub.upload(original, hint: bob, userId: "mallory", authentication: .open)
        // A record from before ingest said how it authenticated counts as unauthenticated.
        let legacy = sub.upload(original, hint: bob, userId: "mallory", authentication: nil)

        for order in [[owner, attack], [attack, owner]] {
            var ledger = InMemoryLedger(policy: testPolicy)
            let decisions = try order.map { try ledger.apply($0) }
            let state = try #require(ledger.purchases.values.first)
            #expect(state.owner(policy: .refuse) == alice)
            #expect(state.claims.map(\.customerId) == [alice])
            #expect(ledger.rows(source: "upload-1").allSatisfy { $0.id.customer.customerId == alice && $0.active })
            // The refusal is recorded with the event, with its reason.
            #expect(decisions.filter { $0.note?.contains("upload hints not counted") == true }.count == 1)
        }
        let attackEvent = try GrantEvent(attack)
        #expect(attackEvent.claim == nil)
        #expect(attackEvent.externalUserId == nil)
        #expect(attackEvent.uploadHintsRefusal?.contains("authenticated as none") == true)
        #expect(try GrantEvent(legacy).uploadHintsRefusal?.contains("not authenticated") == true)
    }

    @Test("an authenticated upload names the buyer and its user; HMAC from the app's backend counts as well")
    func authenticatedUploads() throws {
        let (sub, _) = purchase(.production)
        for authentication in [UploadAuthentication.jwt, .hmac] {
            let event = try GrantEvent(sub.upload(hint: alice, userId: "alice@idp", authentication: authentication))
            #expect(event.claim?.customerId == alice)
            #expect(event.claim?.verified == false)  // Apple did not sign it: Apple's own token still outranks it
            #expect(event.externalUserId == "alice@idp")
            #expect(event.uploadHintsRefusal == nil)
        }
    }

    @Test("with uploads deliberately open, Sandbox hints still name the buyer, as in the local demo")
    func sandboxOpenUploads() throws {
        let (sub, _) = purchase(.sandbox)
        var ledger = InMemoryLedger(policy: testPolicy)
        let decision = try ledger.apply(sub.upload(hint: bob, userId: "demo-user", authentication: .open))
        #expect(decision.event.claim?.customerId == bob)
        // The body's user is a claim no credential vouches for: never recorded as anyone's user.
        #expect(decision.event.externalUserId == nil)
        #expect(decision.note == nil || decision.note?.contains("upload hints") == false)
        #expect(ledger.purchases.values.first?.owner(policy: .refuse) == bob)
    }

    @Test("Apple's own appAccountToken decides, whatever an authenticated upload claims")
    func appleTokenOutranksHints() throws {
        var sub = SimulatedPurchase(
            environment: .production, customer: alice, productType: .autoRenewableSubscription,
            productId: LifecycleGenerator.monthly, originalTransactionId: "upload-2", start: t0, uuidSeed: 12)
        sub.addTransaction(reason: .purchase)
        let upload = sub.upload(hint: bob, userId: "bob@idp", authentication: .jwt)
        let event = try GrantEvent(upload)
        #expect(event.claim?.customerId == alice)
        #expect(event.claim?.verified == true)
    }
}
