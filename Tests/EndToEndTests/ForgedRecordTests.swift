import AppStore
import Foundation
import GrantTestSupport
import GrantWorkload
import KafkaClient
import PipelineMessages
import PipelineRecords
import TestSupport
import Testing

/// Issue 28's forged record: someone who can write to the enriched topic (a leaked credential, a
/// wrong ACL) hands grant a record granting a customer a subscription. Grant applies only what
/// enrich signed (RECORD_MAC_KEYS_FILE), so the forgery is dead-lettered and grants nothing.
@Suite(
    "Forged enriched records", .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized,
    .timeLimit(.minutes(15)))
struct ForgedRecordTests {
    /// A well-formed enriched record saying `customer` bought a subscription just now.
    static func purchase(for customer: UUID, id: String, bundleId: String) -> EnrichedRecord {
        var purchase = SimulatedPurchase(
            environment: .sandbox, customer: customer, productType: .autoRenewableSubscription,
            productId: "com.example.entitlements.premium.monthly", originalTransactionId: id, start: Date().addingTimeInterval(-60),
            uuidSeed: UInt64.random(in: 1...UInt64.max))
        purchase.bundleId = bundleId
        purchase.addTransaction(reason: .purchase)
        return purchase.notify(.subscribed, .initialBuy)
    }

    @Test("unsigned and wrongly signed records are dead-lettered as record.unauthenticated and grant nothing; enrich's own records are applied")
    func forgeriesAreRefused() async throws {
        try await PipelineUnderTest.with { pipeline in
            let unsigned = UUID()
            let wrongKey = UUID()
            let signedWithTheKey = UUID()
            let stamp = String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(12)
            let topic = try #require(pipeline.topics[Topics.enriched])
            let stranger = try RecordKeys(keys: [(id: "stranger", secret: (0..<32).map { _ in UInt8.random(in: 0...255) })])
            let theKey = try RecordKeys.load(file: pipeline.recordKeys.path)
            let producer = try TestServices.makeProducer()
            _ = try await producer.sendAll([
                try EnrichedMessage.make(
                    Self.purchase(for: unsigned, id: "81\(stamp)1", bundleId: pipeline.bundleId), topic: topic, ingestedAt: Date()),
                try EnrichedMessage.make(
                    Self.purchase(for: wrongKey, id: "81\(stamp)2", bundleId: pipeline.bundleId), topic: topic, ingestedAt: Date(), keys: stranger),
                // The control: the same kind of record with enrich's key is applied, so the key is what stops the others.
                try EnrichedMessage.make(
                    Self.purchase(for: signedWithTheKey, id: "81\(stamp)3", bundleId: pipeline.bundleId), topic: topic, ingestedAt: Date(),
                    keys: theKey),
            ])
            await producer.close()

            let letters = try await TopicReader.read(try #require(pipeline.topics[Topics.grantDeadLetters])) { $0.count >= 2 }
            #expect(letters.count == 2)
            #expect(letters.allSatisfy { $0.headers.string(DeadLetterHeader.errorCode) == "record.unauthenticated" })
            let reasons = letters.compactMap { $0.headers.string(DeadLetterHeader.errorMessage) }.sorted()
            #expect(reasons.contains { $0.contains("no record-mac") } && reasons.contains { $0.contains("stranger") }, "\(reasons)")

            try await TokenReassignmentTests.waitFor(pipeline) { try await $0.entitlements()[signedWithTheKey.uuidString.lowercased()] != nil }
            let entitlements = try await pipeline.entitlements()
            #expect(entitlements[unsigned.uuidString.lowercased()] == nil, "an unsigned record granted access")
            #expect(entitlements[wrongKey.uuidString.lowercased()] == nil, "a record signed with another key granted access")
        }
    }
}
