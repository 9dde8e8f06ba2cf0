import AppStore
import Foundation
import SimulatedCustomers
import Testing

@Suite("Lifecycle simulation: Apple's records and the ground truth")
struct SimulatedCustomerTests {
    let horizon = Date(timeIntervalSince1970: 1_800_000_000)
    let month: TimeInterval = 300  // five minutes, as in Apple's sandbox
    var simulation: LifecycleSimulation { LifecycleSimulation(month: month, horizon: horizon, seed: 42) }
    var catalog: SimulationCatalog { .standard() }

    func customer(_ scenario: LifecycleScenario) -> SimulatedCustomer {
        simulation.customers(1, scenarios: [scenario])[0]
    }

    func types(_ customer: SimulatedCustomer) -> [String] {
        customer.steps.compactMap(\.notification).map { n in
            [n.type.rawValue, n.subtype?.rawValue].compactMap { $0 }.joined(separator: "/")
        }
    }

    @Test("the same seed gives the same customers; another seed other tokens")
    func deterministic() {
        let a = simulation.customers(50)
        let b = simulation.customers(50)
        #expect(a.map(\.customer) == b.map(\.customer))
        #expect(a.map(\.steps) == b.map(\.steps))
        let c = LifecycleSimulation(month: month, horizon: horizon, seed: 43).customers(50)
        #expect(Set(a.map(\.customer)).isDisjoint(with: c.map(\.customer)))
    }

    @Test("every scenario is played, steps come in time order before the horizon, and name existing transactions")
    func wellFormed() {
        let customers = simulation.customers(LifecycleScenario.allCases.count * 3)
        #expect(Set(customers.map(\.scenario)) == Set(LifecycleScenario.allCases))
        for customer in customers {
            #expect(customer.steps.map(\.time) == customer.steps.map(\.time).sorted())
            #expect(customer.steps.allSatisfy { $0.time < horizon }, "\(customer.scenario)")
            let ids = Set(customer.transactions.compactMap(\.transactionId))
            for step in customer.steps {
                if let n = step.notification { #expect(ids.contains(n.transactionId), "\(customer.scenario): \(n.type)") }
            }
        }
        let allIDs = customers.flatMap(\.transactions).compactMap(\.transactionId)
        #expect(Set(allIDs).count == allIDs.count, "transaction IDs are unique across customers")
    }

    @Test("the expected entitlements hold from the horizon until 0.25 months after it")
    func stable() {
        for scenario in LifecycleScenario.allCases {
            let c = customer(scenario)
            let atHorizon = c.expected
            // Anything active at the horizon is still active a quarter month later.
            #expect(atHorizon.allSatisfy { ($0.until ?? .distantFuture) > horizon.addingTimeInterval(0.25 * month) }, "\(scenario)")
        }
    }

    @Test(
        "each scenario sends Apple's notifications and ends with the right entitlements",
        arguments: [
            (LifecycleScenario.renewing, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "DID_RENEW"], ["premium"]),
            (.withoutTokenUploaded, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW"], ["premium"]),
            (.upgrade, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "DID_CHANGE_RENEWAL_PREF/UPGRADE"], ["premium"]),
            (.downgrade, ["SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_PREF/DOWNGRADE", "DID_RENEW"], ["basic"]),
            (.crossgrade, ["SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_PREF/DOWNGRADE", "DID_RENEW"], ["premium"]),
            (
                .autoRenewOffAndOn,
                [
                    "SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED",
                    "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED", "DID_RENEW",
                ], ["premium"]
            ),
            (
                .gracePeriodRecovered,
                [
                    "SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "DID_FAIL_TO_RENEW/GRACE_PERIOD",
                    "DID_RENEW/BILLING_RECOVERY",
                ], ["premium"]
            ),
            (
                .billingRetryExpired,
                [
                    "SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "DID_FAIL_TO_RENEW/GRACE_PERIOD",
                    "GRACE_PERIOD_EXPIRED", "EXPIRED/BILLING_RETRY",
                ], []
            ),
            (.inBillingRetry, ["SUBSCRIBED/INITIAL_BUY", "DID_FAIL_TO_RENEW"], []),
            (.inGracePeriod, ["SUBSCRIBED/INITIAL_BUY", "DID_FAIL_TO_RENEW/GRACE_PERIOD"], ["premium"]),
            (.voluntaryExpiry, ["SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "EXPIRED/VOLUNTARY"], []),
            (
                .resubscribed,
                [
                    "SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "EXPIRED/VOLUNTARY",
                    "SUBSCRIBED/RESUBSCRIBE", "DID_RENEW",
                ], ["premium"]
            ),
            (.priceIncreaseAccepted, ["SUBSCRIBED/INITIAL_BUY", "PRICE_INCREASE/PENDING", "PRICE_INCREASE/ACCEPTED", "DID_RENEW"], ["premium"]),
            (.priceIncreaseDeclined, ["SUBSCRIBED/INITIAL_BUY", "PRICE_INCREASE/PENDING", "EXPIRED/PRICE_INCREASE"], []),
            (.offerRedeemed, ["SUBSCRIBED/INITIAL_BUY", "OFFER_REDEEMED", "DID_RENEW"], ["premium"]),
            (.refunded, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "REFUND"], []),
            (.refundReversed, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "REFUND", "REFUND_REVERSED"], ["premium"]),
            (.refundDeclined, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "CONSUMPTION_REQUEST", "REFUND_DECLINED"], ["premium"]),
            (.familySharingRevoked, ["SUBSCRIBED/INITIAL_BUY", "REVOKE"], []),
            (.renewalExtended, ["SUBSCRIBED/INITIAL_BUY", "RENEWAL_EXTENDED"], ["premium"]),
            (.consumables, ["ONE_TIME_CHARGE", "ONE_TIME_CHARGE", "ONE_TIME_CHARGE", "REFUND"], []),
            (.nonConsumable, ["ONE_TIME_CHARGE"], ["lifetime"]),
            (.nonRenewing, ["ONE_TIME_CHARGE"], ["season"]),
            (.storeKit1Receipt, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW"], ["premium"]),
            (.offerCodeUploaded, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW"], ["premium"]),
            (.tokenReassigned, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW"], ["premium"]),
            (.familyShared, ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW"], ["premium"]),
            (.notYetInHistory, ["SUBSCRIBED/INITIAL_BUY"], ["premium"]),
        ])
    func scenario(_ scenario: LifecycleScenario, notifications: [String], entitlements: [String]) {
        let c = customer(scenario)
        #expect(types(c) == notifications)
        #expect(c.expected.map(\.entitlement) == entitlements)
        #expect(c.expected.allSatisfy { $0.customer == c.customer })
    }

    @Test("an upgrade revokes the old transaction as upgraded; a plan change waits for the renewal")
    func planChanges() throws {
        let upgrade = customer(.upgrade)
        let basic = try #require(upgrade.transactions.last { $0.productId == catalog.basicMonthly.productId })
        #expect(basic.isUpgraded == true && basic.revocationDate != nil)
        let premium = try #require(upgrade.transactions.last)
        #expect(premium.productId == catalog.premiumMonthly.productId && premium.revocationDate == nil)
        #expect(premium.originalTransactionId == basic.originalTransactionId)

        let crossgrade = customer(.crossgrade)
        #expect(crossgrade.transactions.map(\.productId) == [catalog.premiumMonthly.productId, catalog.premiumYearly.productId])
        let yearly = try #require(crossgrade.transactions.last)
        #expect(crossgrade.expected.first?.until == yearly.expiresDate)
        #expect(yearly.expiresDate!.timeIntervalSince(yearly.purchaseDate!) == 12 * month)
    }

    @Test("grace period: access until the grace period ends; billing retry without grace: none")
    func billingProblems() throws {
        let grace = customer(.inGracePeriod)
        let status = try #require(
            grace.steps.last?.mutations.compactMap { mutation -> (SubscriptionStatus, JWSRenewalInfoDecodedPayload)? in
                if case .subscription(_, let status, let renewal) = mutation { return (status, renewal) }
                return nil
            }.first)
        #expect(status.0 == .billingGracePeriod)
        #expect(status.1.isInBillingRetryPeriod == true)
        #expect(grace.expected.first?.until == status.1.gracePeriodExpiresDate)
        #expect(customer(.inBillingRetry).expected.isEmpty)
    }

    @Test("a purchase without a token is uploaded by the app with the customer's token")
    func upload() throws {
        let c = customer(.withoutTokenUploaded)
        #expect(c.transactions.allSatisfy { $0.appAccountToken == nil })
        let upload = try #require(c.steps.compactMap(\.upload).first)
        #expect(upload.appAccountToken == c.customer)
        #expect(upload.transactionId == c.transactions.first?.transactionId)
    }

    @Test("an old app's StoreKit 1 receipt and an offer code redeemed outside the app: no token, uploaded after the purchase")
    func laterUploads() throws {
        for (scenario, kind) in [(LifecycleScenario.storeKit1Receipt, UploadSpec.Kind.appReceipt), (.offerCodeUploaded, .signedTransaction)] {
            let c = customer(scenario)
            #expect(c.transactions.allSatisfy { $0.appAccountToken == nil }, "\(scenario)")
            let uploadStep = try #require(c.steps.firstIndex { $0.upload != nil })
            #expect(
                c.steps[uploadStep].upload == UploadSpec(transactionId: c.transactions[0].transactionId!, appAccountToken: c.customer, kind: kind))
            #expect(uploadStep > 0 && c.steps[uploadStep].notification == nil, "uploaded after the purchase, on its own")
            #expect(c.formerCustomers.isEmpty)
        }
        let offer = customer(.offerCodeUploaded).transactions[0]
        #expect(offer.offerType == .offerCode && offer.offerIdentifier == "WELCOME-BACK")
    }

    @Test("Apple re-assigns the token: the purchase and later renewals name the new customer; the old one is a former customer")
    func tokenReassigned() throws {
        let c = customer(.tokenReassigned)
        let former = try #require(c.formerCustomers.first)
        #expect(former != c.customer)
        let purchase = try #require(c.steps.first?.mutations.compactMap { if case .transaction(let t) = $0 { t } else { nil } }.first)
        #expect(purchase.appAccountToken == former, "bought under the former customer's token")
        let change = try #require(c.steps.first { $0.notification == nil })
        let changed = change.mutations.compactMap { if case .transaction(let t) = $0 { t } else { nil } }
        #expect(!changed.isEmpty && changed.allSatisfy { $0.appAccountToken == c.customer && $0.signedDate == change.time })
        #expect(change.mutations.contains { if case .subscription(_, _, let r) = $0 { r.appAccountToken == c.customer } else { false } })
        #expect(c.transactions.allSatisfy { $0.appAccountToken == c.customer })
    }

    @Test("family members' own transactions are FAMILY_SHARED without a token; each member's app uploads them; a run has two members per revoked one")
    func familyMembers() throws {
        for scenario in [LifecycleScenario.familyShared, .familySharingRevoked] {
            let c = customer(scenario)
            #expect(c.ownership == .familyShared)
            #expect(c.transactions.allSatisfy { $0.appAccountToken == nil && $0.inAppOwnershipType == .familyShared }, "\(scenario)")
            #expect(c.steps.compactMap(\.upload).map(\.appAccountToken) == [c.customer])
        }
        let run = simulation.customers(LifecycleScenario.rotation.count)
        #expect(run.filter { $0.scenario == .familyShared }.count == 2 && run.filter { $0.scenario == .familySharingRevoked }.count == 1)
    }

    @Test("a purchase not yet in Apple's history hides it from the next two lookups")
    func notYetInHistory() throws {
        let c = customer(.notYetInHistory)
        let id = try #require(c.transactions.first?.transactionId)
        #expect(c.steps.first?.mutations.first == .historyNotVisible(transactionId: id, lookups: 2))
        #expect(c.transactions.first?.appAccountToken == c.customer)
    }

    @Test("every transaction carries its customer's app transaction; customers' differ")
    func appTransactions() {
        let customers = simulation.customers(LifecycleScenario.rotation.count)
        for c in customers {
            #expect(Set(c.transactions.map(\.appTransactionId)).count == 1 && c.transactions.first?.appTransactionId != nil, "\(c.scenario)")
        }
        #expect(Set(customers.compactMap { $0.transactions.first?.appTransactionId }).count == customers.count)
    }

    @Test("consumables count the units bought and not refunded")
    func consumables() {
        #expect(customer(.consumables).consumableUnits == [catalog.coins.productId: 5])
    }
}
