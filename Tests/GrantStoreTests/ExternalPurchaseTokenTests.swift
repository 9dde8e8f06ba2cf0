import AppStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import Synchronization
import Testing

@testable import EntitlementStore

/// `EXTERNAL_PURCHASE_TOKEN` on the change stream: each notification published once, without a
/// customer, beside the customers' changes and in the same outbox rounds.
@Suite("External purchase tokens against Postgres", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct ExternalPurchaseTokenTests {
    /// The enriched record of an `EXTERNAL_PURCHASE_TOKEN` as verify and enrich pass it on (no lookup).
    static func notification(_ id: String, subtype: NotificationSubtype = .unreported) -> EnrichedRecord {
        let uuid = UUID().uuidString.lowercased()
        let now = Date()
        let token = ExternalPurchaseToken(
            externalPurchaseId: id, tokenCreationDate: 1_698_148_950_000, tokenType: .services, appAppleId: 1234,
            bundleId: "com.example.entitlements")
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .externalPurchaseToken, subtype: subtype, notificationUUID: uuid, externalPurchaseToken: token, version: "2.0",
            signedDate: now)
        let verified = VerifiedRecord(
            kind: .notification, source: "apple-webhook", environment: .sandbox, bundleId: "com.example.entitlements", appAppleId: 1234,
            notificationUUID: uuid, notification: payload, signedPayload: "jws.\(uuid)", verifiedAt: now)
        return EnrichedRecord(verified: verified, enrichment: Enrichment(lookup: .none, fetchedAt: now.addingTimeInterval(1)))
    }

    /// Runs outbox rounds until one hands out nothing, and returns everything handed out.
    static func drain(_ store: EntitlementStore) async throws -> [OutboxEntry] {
        let box = Mutex<[OutboxEntry]>([])
        while let n = try await store.publishOutbox(limit: 50, { entries in box.withLock { $0 += entries } }), n > 0 {}
        return box.withLock { $0 }
    }

    struct Published: Decodable {
        struct Cause: Decodable {
            var eventKey: String
            var type: String
            var subtype: String?
        }
        var schema: String
        var environment: String
        var change: String
        var customerId: String?
        var seq: Int64?
        var externalPurchaseToken: ExternalPurchaseToken
        var cause: Cause
    }

    @Test("a token is published once without a customer, keyed by its externalPurchaseId, and kept as published; a replay adds nothing")
    func publishedOnce() async throws {
        let record = Self.notification("SANDBOX_a1b2c3", subtype: .activeTokenReminder)
        try await ScratchDatabase.with { db in
            let decisions = try await applyAll([record, record], db.store, policy: generatorPolicy)
            #expect(decisions.map(\.outcome) == [.recorded, .duplicate])
            #expect(decisions.map(\.publishes) == [true, false], "the publisher is woken for the new token only")
            #expect(decisions[0].changes.isEmpty, "no customer's change")

            let entries = try await Self.drain(db.store)
            #expect(entries.count == 1)
            let entry = try #require(entries.first)
            #expect(entry.key == "Sandbox:external-purchase:SANDBOX_a1b2c3")
            #expect(entry.subject == .externalPurchase(id: "SANDBOX_a1b2c3", eventKey: decisions[0].event.eventKey))
            let body = try JSONDecoder().decode(Published.self, from: Data(entry.body.utf8))
            #expect(body.schema == "entitlements.changes.v1" && body.environment == "Sandbox" && body.change == "external_purchase_token")
            #expect(body.customerId == nil && body.seq == nil)
            #expect(body.externalPurchaseToken.externalPurchaseId == "SANDBOX_a1b2c3")
            #expect(body.externalPurchaseToken.tokenCreationDate == 1_698_148_950_000 && body.externalPurchaseToken.tokenType == .services)
            #expect(body.cause.type == "EXTERNAL_PURCHASE_TOKEN" && body.cause.subtype == "ACTIVE_TOKEN_REMINDER")
            #expect(body.cause.eventKey == decisions[0].event.eventKey)

            #expect(try await db.count("SELECT count(*) FROM external_purchase_tokens WHERE published_at IS NOT NULL") == 1)
            #expect(try await Self.drain(db.store).isEmpty, "published once")
            _ = try await applyAll([record], db.store, policy: generatorPolicy)
            #expect(try await Self.drain(db.store).isEmpty, "a replay publishes nothing")
            #expect(try await db.count("SELECT count(*) FROM external_purchase_tokens") == 1)
            #expect(try await db.store.outboxBacklog().unpublishedRows == 0)
        }
    }

    @Test("tokens and customers' changes share outbox rounds: each goes out once, and a failed round hands both out again")
    func besideCustomerChanges() async throws {
        var sub = SimulatedPurchase(
            customer: UUID(), productType: .autoRenewableSubscription, productId: LifecycleGenerator.monthly, originalTransactionId: "ept-1",
            start: Date().addingTimeInterval(-3600), uuidSeed: 61)
        sub.addTransaction(reason: .purchase)
        let buy = sub.notify(.subscribed, .initialBuy)
        try await ScratchDatabase.with { db in
            _ = try await applyAll(
                [buy, Self.notification("SANDBOX_x1"), Self.notification("SANDBOX_x2", subtype: .created)], db.store, policy: generatorPolicy)
            #expect(try await db.store.outboxBacklog().unpublishedRows == 3)

            struct BrokerDown: Error {}
            await #expect(throws: StoreError.self) { try await db.store.publishOutbox(limit: 50) { _ in throw BrokerDown() } }
            #expect(try await db.store.outboxBacklog().unpublishedRows == 3, "nothing marked when the broker failed")

            let entries = try await Self.drain(db.store)
            let tokens = entries.compactMap { entry -> String? in
                if case .externalPurchase(let id, _) = entry.subject { return id }
                return nil
            }
            #expect(tokens.sorted() == ["SANDBOX_x1", "SANDBOX_x2"])
            #expect(entries.count(where: { if case .customer = $0.subject { true } else { false } }) == 1)
            #expect(try await db.store.outboxBacklog().unpublishedRows == 0)
        }
    }
}
