import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import ConsumptionResponder
import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import PostgresNIO
import TestSupport
import Testing

@Suite("consumption requests answered from grant's records", .enabled(if: ScratchDatabase.enabled))
struct ConsumptionResponderTests {
    static let policy = ConsumptionPolicy(apps: [SimFixture.bundleId], deliveredRefundPreference: "DECLINE")

    /// A purchase of the simulator's app, in Sandbox, made two hours ago; its clock is now.
    static func purchase(_ original: String, _ type: ProductType, customer: UUID?) -> SimulatedPurchase {
        var purchase = SimulatedPurchase(
            environment: .sandbox, customer: customer, productType: type,
            productId: type == .consumable ? "com.example.coins" : "com.example.premium",
            originalTransactionId: original, start: Date().addingTimeInterval(-7200), uuidSeed: UInt64(original)!)
        purchase.bundleId = SimFixture.bundleId
        purchase.addTransaction(reason: .purchase)
        purchase.now = Date()
        return purchase
    }

    /// Applies records through grant's store, as the grant stage does.
    static func apply(_ db: ScratchDatabase, _ records: [EnrichedRecord]) async throws {
        let results = try await db.store.apply(try records.map(GrantEvent.init), policy: GrantPolicy())
        for result in results { _ = try result.get() }
    }

    static func rows(_ db: ScratchDatabase) async throws -> [String: (status: String, attempts: Int, error: String?)] {
        var rows: [String: (String, Int, String?)] = [:]
        let query = try await db.client.query(
            "SELECT transaction_id, status, attempts, coalesce(last_error, note) FROM consumption_requests", logger: ScratchDatabase.logger)
        for try await (tid, status, attempts, error) in query.decode((String, String, Int, String?).self) { rows[tid] = (status, attempts, error) }
        return rows
    }

    static func responder(_ db: ScratchDatabase, _ sim: RunningSimulator, policy: ConsumptionPolicy = policy) -> ConsumptionResponder {
        ConsumptionResponder(store: db.store, client: sim.client, policy: policy, logger: ScratchDatabase.logger)
    }

    @Test("each opted-in request is answered once from our records; other apps are skipped and late ones never sent")
    func answersFromRecords() async throws {
        try await ScratchDatabase.with { db in
            try await RunningSimulator.with { sim in
                let customer = UUID()
                // A subscription delivered and renewed; the customer asks about the first period.
                var subscription = Self.purchase("6001", .autoRenewableSubscription, customer: customer)
                let subscribed = subscription.notify(.subscribed, .initialBuy)
                subscription.addTransaction(reason: .renewal, start: Date().addingTimeInterval(-3600))
                var subscriptionRequest = subscription.notify(.consumptionRequest, consumptionReason: .unsatisfiedWithPurchase)
                subscriptionRequest.verified.transaction = subscription.transactions[0]
                subscriptionRequest.verified.transactionId = "6001"
                // A consumable delivered to the customer, and one with no customer (never delivered by us).
                var delivered = Self.purchase("6101", .consumable, customer: customer)
                var undelivered = Self.purchase("6201", .consumable, customer: nil)
                // A request older than Apple's 12 hours.
                var late = Self.purchase("6301", .consumable, customer: customer)
                late.now = Date().addingTimeInterval(-13 * 3600)
                try sim.apple.store.upsert(subscription.transactions + delivered.transactions + undelivered.transactions + late.transactions)

                try await Self.apply(
                    db,
                    [
                        subscribed, subscription.notify(.didRenew), subscriptionRequest,
                        delivered.notify(.oneTimeCharge), delivered.notify(.consumptionRequest, consumptionReason: .fulfillmentIssue),
                        undelivered.notify(.oneTimeCharge), undelivered.notify(.consumptionRequest, consumptionReason: .unintendedPurchase),
                        late.notify(.consumptionRequest, consumptionReason: .other),
                    ])
                let responder = Self.responder(db, sim)
                #expect(try await responder.answerDue() == 4)

                let received = Dictionary(uniqueKeysWithValues: sim.apple.store.receivedConsumption.map { ($0.transactionId, $0.request) })
                #expect(received.keys.sorted() == ["6001", "6101", "6201"])
                for request in received.values {
                    #expect(request.customerConsented == true)
                    #expect(request.sampleContentProvided == false)
                }
                #expect(received["6001"]?.deliveryStatus == "DELIVERED")
                #expect(received["6001"]?.consumptionPercentage == nil, "Apple refuses a percentage for auto-renewable subscriptions")
                #expect(received["6001"]?.refundPreference == "DECLINE")
                #expect(received["6101"]?.deliveryStatus == "DELIVERED")
                #expect(received["6201"]?.deliveryStatus == "UNDELIVERED_OTHER")
                #expect(received["6201"]?.consumptionPercentage == 0)
                #expect(received["6201"]?.refundPreference == "GRANT_FULL")

                let rows = try await Self.rows(db)
                #expect(rows.mapValues(\.status) == ["6001": "sent", "6101": "sent", "6201": "sent", "6301": "expired"])
                let body = try await db.count("SELECT count(*) FROM consumption_requests WHERE request_body->>'deliveryStatus' = 'DELIVERED'")
                #expect(body == 2)

                // Answered requests are never sent again; a request of an app that did not opt in is skipped.
                #expect(try await responder.answerDue() == 0)
                var other = Self.purchase("6401", .consumable, customer: customer)
                other.bundleId = "com.example.other"
                try await Self.apply(db, [other.notify(.consumptionRequest, consumptionReason: .legal)])
                #expect(try await responder.answerDue() == 1)
                #expect(sim.apple.store.receivedConsumption.count == 3)
                let skipped = try await Self.rows(db)["6401"]
                #expect(skipped?.status == "skipped")
                #expect(skipped?.error?.contains("has not opted in") == true)
            }
        }
    }

    @Test("an outage at Apple is retried until the answer is accepted; Apple's permanent refusal is recorded with its code")
    func retriesThenRecordsRefusal() async throws {
        try await ScratchDatabase.with { db in
            try await RunningSimulator.with { sim in
                var coins = Self.purchase("6501", .consumable, customer: UUID())
                var unknown = Self.purchase("6601", .consumable, customer: UUID())
                try sim.apple.store.upsert(coins.transactions)  // Apple does not know 6601
                try await Self.apply(
                    db,
                    [
                        coins.notify(.oneTimeCharge), coins.notify(.consumptionRequest, consumptionReason: .fulfillmentIssue),
                        unknown.notify(.consumptionRequest, consumptionReason: .other),
                    ])
                let responder = Self.responder(db, sim)

                sim.apple.faults.set(FaultPlan(errorShare: 1, errorStatus: 500, errorCode: 5_000_000))
                let beforeAttempt = Date()
                #expect(try await responder.answerDue() == 2)
                var rows = try await Self.rows(db)
                #expect(rows["6501"]?.status == "pending")
                #expect(rows["6501"]?.error?.contains("5000000") == true)
                // The first backoff is 5 s from the failed attempt, which began after `beforeAttempt`:
                // measured from then, not from now, so a slow machine does not eat into it.
                let attemptStart = ISO8601DateFormatter().string(from: beforeAttempt)
                let waiting = try await db.count(
                    "SELECT count(*) FROM consumption_requests WHERE next_attempt_at > '\(attemptStart)'::timestamptz + interval '4 seconds'")
                #expect(waiting == 2, "a failed request waits for its backoff")
                #expect(sim.apple.store.receivedConsumption.isEmpty)

                sim.apple.faults.set(.none)
                try await db.client.query("UPDATE consumption_requests SET next_attempt_at = now()", logger: ScratchDatabase.logger)
                #expect(try await responder.answerDue() == 2)
                rows = try await Self.rows(db)
                #expect(rows["6501"]?.status == "sent")
                #expect(rows["6501"]?.attempts == 2)
                #expect(rows["6601"]?.status == "failed")
                #expect(rows["6601"]?.error?.contains("4040010") == true)
                #expect(sim.apple.store.receivedConsumption.map(\.transactionId) == ["6501"])
            }
        }
    }

    @Test("the policy never claims a delivery our records do not show, and never sends a percentage for a subscription")
    func policyRules() {
        func record(_ type: String?, delivered: Bool, bundle: String? = SimFixture.bundleId, tid: String? = "1") -> ConsumptionRequestRecord {
            ConsumptionRequestRecord(
                environment: "Sandbox", notificationUUID: UUID().uuidString, bundleId: bundle, transactionId: tid, originalTransactionId: tid,
                reason: "OTHER", deadline: Date().addingTimeInterval(3600), attempts: 1, productType: type, delivered: delivered)
        }
        func body(_ decision: ConsumptionPolicy.Decision) -> ConsumptionRequest? {
            if case .send(_, _, let body) = decision { return body }
            return nil
        }
        let policy = ConsumptionPolicy(apps: [SimFixture.bundleId], sampleContentProvided: true)
        #expect(body(policy.decide(record("Auto-Renewable Subscription", delivered: false)))?.consumptionPercentage == nil)
        #expect(body(policy.decide(record("Non-Consumable", delivered: false)))?.consumptionPercentage == 0)
        #expect(body(policy.decide(record("Non-Consumable", delivered: true)))?.deliveryStatus == "DELIVERED")
        #expect(body(policy.decide(record("Non-Consumable", delivered: true)))?.refundPreference == nil)
        #expect(body(policy.decide(record(nil, delivered: false)))?.deliveryStatus == "UNDELIVERED_OTHER")
        #expect(body(policy.decide(record(nil, delivered: true)))?.sampleContentProvided == true)
        #expect(body(policy.decide(record("Consumable", delivered: true, bundle: "com.other"))) == nil)
        #expect(body(policy.decide(record("Consumable", delivered: true, tid: nil))) == nil)
    }
}
