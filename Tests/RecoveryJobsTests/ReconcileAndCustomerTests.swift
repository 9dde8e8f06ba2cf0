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

@Suite("reconcile and customer against grant's schema", .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled))
struct ReconcileAndCustomerTests {
    /// One `subscriptions` row as grant writes it (the columns reconcile and customer read).
    static func insertSubscription(
        _ db: ScratchDatabase, original: String, lifecycle: String, expires: Date, grace: Date? = nil, owner: UUID? = nil,
        type: String = "Auto-Renewable Subscription", bundle: String = SimFixture.bundleId
    ) async throws {
        try await db.client.query(
            """
            INSERT INTO subscriptions (environment, original_transaction_id, product_type, product_id, auto_renew_product_id,
                auto_renew_enabled, lifecycle, purchase_date, expires_at, grace_period_expires_at, is_in_billing_retry,
                latest_transaction_id, owner_customer_id, state_as_of, state_event_key, state)
            VALUES ('Sandbox', \(original), \(type), 'com.example.premium.monthly', 'com.example.premium.monthly', true, \(lifecycle),
                \(expires.addingTimeInterval(-30 * 86_400)), \(expires), \(grace), \(lifecycle == "billing_retry"),
                \(original), \(owner?.uuidString.lowercased())::uuid, \(expires.addingTimeInterval(-30 * 86_400)), \("notification:" + original), '{}'::jsonb)
            """, logger: ScratchDatabase.logger)
        try await db.client.query(
            """
            INSERT INTO transactions (environment, transaction_id, original_transaction_id, bundle_id, product_id, payload)
            VALUES ('Sandbox', \(original), \(original), \(bundle), 'com.example.premium.monthly', '{}'::jsonb)
            """, logger: ScratchDatabase.logger)
    }

    static func insertNotification(_ db: ScratchDatabase, original: String, signed: Date) async throws {
        try await db.client.query(
            """
            INSERT INTO notifications (environment, event_key, notification_uuid, kind, source, notification_type, original_transaction_id,
                signed_date, verified_at, outcome)
            VALUES ('Sandbox', \("notification:" + UUID().uuidString), NULL, 'notification', 'apple-webhook', 'DID_CHANGE_RENEWAL_PREF',
                \(original), \(signed), \(signed), 'applied')
            """, logger: ScratchDatabase.logger)
    }

    @Test("reconcile selects exactly the overdue subscriptions and queues their latest transaction for enrich")
    func reconcileQueuesOverdue() async throws {
        try await ScratchDatabase.with { db in
            let now = Date()
            let hour: TimeInterval = 3600
            try await Self.insertSubscription(db, original: "5001", lifecycle: "active", expires: now - 2 * hour)  // overdue
            try await Self.insertSubscription(db, original: "5002", lifecycle: "active", expires: now + 24 * hour)  // running
            try await Self.insertSubscription(db, original: "5003", lifecycle: "expired", expires: now - 2 * hour)  // ended
            try await Self.insertSubscription(db, original: "5004", lifecycle: "active", expires: now - 2 * hour)  // newer event
            try await Self.insertNotification(db, original: "5004", signed: now - hour)
            try await Self.insertSubscription(db, original: "5005", lifecycle: "active", expires: now - 600)  // within leeway
            try await Self.insertSubscription(
                db, original: "5006", lifecycle: "grace_period", expires: now - 72 * hour, grace: now - 2 * hour)  // grace over
            try await Self.insertSubscription(
                db, original: "5007", lifecycle: "grace_period", expires: now - 72 * hour, grace: now + 24 * hour)  // in grace
            try await Self.insertSubscription(db, original: "5008", lifecycle: "active", expires: now - 2 * hour, bundle: "com.other.app")
            try await Self.insertSubscription(
                db, original: "5009", lifecycle: "active", expires: now - 2 * hour, type: "Non-Renewing Subscription")

            let reconciler = SubscriptionReconciler(database: db.client, logger: ScratchDatabase.logger)
            let overdue = try await reconciler.overdue(bundleId: SimFixture.bundleId, leeway: .seconds(3600), now: now)
            #expect(overdue.map(\.originalTransactionId) == ["5001", "5006"])
            let everyApp = try await reconciler.overdue(leeway: .seconds(3600), now: now)
            #expect(Set(everyApp.map(\.originalTransactionId)) == ["5001", "5006", "5008"])
            let noLeeway = try await reconciler.overdue(bundleId: SimFixture.bundleId, leeway: .zero, now: now)
            #expect(Set(noLeeway.map(\.originalTransactionId)) == ["5001", "5005", "5006"])

            try await RunningSimulator.with { sim in
                // Apple's truth: 5001 renewed (a newer transaction), 5006 is unchanged.
                try sim.apple.store.upsert([
                    SimFixture.transaction(original: "5001", id: "5001", purchased: now.addingTimeInterval(-32 * 86_400)),
                    SimFixture.transaction(original: "5001", id: "5101", purchased: now.addingTimeInterval(-2 * 86_400)),
                    SimFixture.transaction(original: "5006", id: "5006", purchased: now.addingTimeInterval(-33 * 86_400)),
                ])
                let verified = try await TestServices.makeTopic("reconcile-verified", partitions: 2)
                let dryRun = await SubscriptionReconciler.queue(overdue, client: sim.client, producer: nil, verifiedTopic: verified)
                #expect(dryRun.allSatisfy { $0.key == nil && $0.failure == nil })

                let producer = try TestServices.makeProducer()
                let items = await SubscriptionReconciler.queue(overdue, client: sim.client, producer: producer, verifiedTopic: verified)
                await producer.close()
                #expect(items.map(\.failure) == [nil, nil])
                #expect(items.map(\.transactionId) == ["5101", "5006"])
                let records = try await TopicReader.read(verified) { $0.count >= 2 }
                #expect(Set(records.compactMap(\.keyString)) == ["Sandbox:5001", "Sandbox:5006"])
                for message in records {
                    let record = try VerifiedRecord.decode(message.value)
                    #expect(record.kind == .transaction)
                    #expect(record.source == "reconcile")
                    #expect(record.bundleId == SimFixture.bundleId)
                    #expect(record.environment == .sandbox)
                    let signed = try #require(record.signedTransaction)
                    #expect(try await sim.client.verifier.verifyTransaction(signed) == record.transaction)
                    #expect(message.headers.string(PipelineHeader.source) == "reconcile")
                    #expect(message.headers.string(PipelineHeader.schema) == Topics.verified)
                }

                // A purchase Apple does not know is reported, and the others still go out.
                var unknown = overdue[0]
                unknown.originalTransactionId = "9999"
                unknown.latestTransactionId = "9999"
                let second = try TestServices.makeProducer()
                let mixed = await SubscriptionReconciler.queue([unknown, overdue[1]], client: sim.client, producer: second, verifiedTopic: verified)
                await second.close()
                #expect(mixed[0].failure?.hasPrefix("apple_api.") == true)
                #expect(mixed[1].failure == nil)
            }
        }
    }

    @Test("customer shows current entitlements, purchases, balances and the change history with causes")
    func customerReport() async throws {
        try await ScratchDatabase.with { db in
            let customer = UUID()
            let other = UUID()
            let now = Date()
            let until = AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: now.addingTimeInterval(86_400)))
            try await Self.insertSubscription(db, original: "6001", lifecycle: "active", expires: until, owner: customer)
            try await Self.insertSubscription(db, original: "6002", lifecycle: "active", expires: until, owner: other)
            try await db.client.query(
                """
                INSERT INTO entitlements (environment, customer_id, entitlement_key, source_id, source_kind, product_id, active, active_from,
                    active_until, reason)
                VALUES ('Sandbox', \(customer.uuidString)::uuid, 'premium', '6001', 'auto_renewable', 'com.example.premium.monthly', true,
                        \(now.addingTimeInterval(-86_400)), \(until), 'subscribed'),
                       ('Sandbox', \(customer.uuidString)::uuid, 'old-feature', '6003', 'auto_renewable', 'com.example.old', true,
                        \(now.addingTimeInterval(-86_400)), \(now.addingTimeInterval(-60)), 'subscribed'),
                       ('Sandbox', \(other.uuidString)::uuid, 'premium', '6002', 'auto_renewable', 'com.example.premium.monthly', true,
                        \(now.addingTimeInterval(-86_400)), \(until), 'subscribed')
                """, logger: ScratchDatabase.logger)
            try await db.client.query(
                """
                INSERT INTO consumable_grants (environment, transaction_id, customer_id, product_id, entitlement_keys, quantity, state_as_of,
                    state_event_key)
                VALUES ('Sandbox', '7001', \(customer.uuidString)::uuid, 'com.example.coins.100', ARRAY['coins'], 100, now(), 'transaction:7001:1'),
                       ('Sandbox', '7002', \(customer.uuidString)::uuid, 'com.example.coins.100', ARRAY['coins'], 100, now(), 'transaction:7002:1')
                """, logger: ScratchDatabase.logger)
            try await db.client.query(
                """
                INSERT INTO entitlement_changes (environment, customer_id, seq, entitlement_key, source_id, product_id, change, active,
                    active_until, reason, cause_event_key, cause_type, cause_subtype, cause_lookup, cause_as_of)
                VALUES ('Sandbox', \(customer.uuidString)::uuid, 1, 'premium', '6001', 'com.example.premium.monthly', 'granted', true,
                        \(until), 'subscribed', 'notification:abc', 'SUBSCRIBED', 'INITIAL_BUY', 'history', now())
                """, logger: ScratchDatabase.logger)

            let report = try await CustomerReport.load(customerID: customer, database: db.client, logger: ScratchDatabase.logger)
            #expect(report.entitlements.map(\.key) == ["premium"])
            // Postgres keeps microseconds and Date is a Double: equal to within a millisecond.
            #expect(report.entitlements.first?.activeUntil.map { abs($0.timeIntervalSince(until)) < 0.001 } == true)
            #expect(report.entitlements.first?.sources == ["6001"])
            #expect(report.subscriptions.map(\.originalTransactionId) == ["6001"])
            #expect(report.subscriptions.first?.autoRenew == true)
            #expect(report.balances.map { "\($0.environment) \($0.key) \($0.quantity)" } == ["Sandbox coins 200"])
            #expect(report.changes.map(\.causeType) == ["SUBSCRIBED"])
            let text = report.text
            #expect(text.contains("premium") && text.contains("SUBSCRIBED/INITIAL_BUY") && text.contains("coins") && text.contains("6001"))
            #expect(!text.contains("6002") && !text.contains("old-feature"))

            let production = try await CustomerReport.load(
                customerID: customer, environment: "Production", database: db.client, logger: ScratchDatabase.logger)
            #expect(production.isEmpty)
            let stranger = try await CustomerReport.load(customerID: UUID(), database: db.client, logger: ScratchDatabase.logger)
            #expect(stranger.isEmpty)
        }
    }
}
