import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import PipelineRecords
import Testing

struct DecisionCase: Sendable, CustomTestStringConvertible {
    var type: NotificationType
    var subtype: NotificationSubtype?
    var product: ProductType
    var testDescription: String { "\(type.rawValue)/\(subtype?.rawValue ?? "-") × \(product.rawValue)" }
}

let allCases: [DecisionCase] = referencePairs.flatMap { pair in
    productTypes.map { DecisionCase(type: pair.0, subtype: pair.1, product: $0) }
}

@Suite("Grant decision: every notification type × subtype × product type")
struct DecisionTableTests {
    @Test("the table covers every reference pair for every product type")
    func coverage() {
        #expect(allCases.count == referencePairs.count * 4)
        let knownTypes = Set(NotificationType.knownValues.map(\.rawValue))
        #expect(knownTypes.isSubset(of: Set(referencePairs.map(\.0.rawValue))))
        let subtypes = Set(referencePairs.compactMap(\.1?.rawValue))
        #expect(Set(NotificationSubtype.knownValues.map(\.rawValue)).isSubset(of: subtypes))
    }

    @Test("decision", arguments: allCases)
    func decision(_ c: DecisionCase) throws {
        let expected =
            c.product == .autoRenewableSubscription
            ? subscriptionExpectation(c.type, c.subtype)
            : oneTimeExpectation(c.type, c.subtype, c.product)
        let (prior, event) = scenario(c.type, c.subtype, c.product)
        var ledger = InMemoryLedger(policy: testPolicy)
        for record in prior { try ledger.apply(record) }
        let decision = try ledger.apply(event)

        #expect(decision.outcome == expected.outcome, "\(decision.note ?? "")")
        #expect(
            decision.changes.map(\.kind.rawValue).sorted() == expected.changes.map(\.rawValue).sorted(),
            "expected \(expected)")
        let source = c.product == .autoRenewableSubscription ? "sub-1" : "one-1"
        let key = PurchaseKey(environment: "Production", purchaseId: source)
        if c.product == .consumable {
            let grant = try #require(ledger.consumables[key])
            #expect(grant.isGranted == expected.active)
            #expect(grant.customer?.customerId == alice)
        } else {
            let state = try #require(ledger.purchases[key])
            if let lifecycle = expected.lifecycle { #expect(state.lifecycle == lifecycle) }
            let row = try #require(ledger.rows(source: source).first { $0.id.entitlementKey == primaryEntitlement(c.product) })
            #expect(row.active == expected.active)
            #expect(row.id.customer.customerId == alice)
            if let reason = expected.reason { #expect(row.reason == reason) }
        }
        for change in decision.changes {
            #expect(change.cause.eventKey == decision.event.eventKey)
            #expect(change.cause.type == c.type.rawValue)
        }
    }
}
