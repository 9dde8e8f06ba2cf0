import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Crypto
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import RecoveryJobs
import StageRuntime
import TestSupport
import Testing

@Suite("backfill and lookup-order against the simulated Apple", .enabled(if: TestServices.brokerEnabled))
struct BackfillAndOrderTests {
    @Test("backfill writes the window's notification history to raw as ingest would; --only-failures filters")
    func backfillWritesHistory() async throws {
        try await RunningSimulator.with { sim in
            let now = Date()
            try sim.apple.store.upsert([
                SimFixture.transaction(original: "3100", id: "3100", purchased: now.addingTimeInterval(-7200)),
                SimFixture.transaction(original: "3200", id: "3200", purchased: now.addingTimeInterval(-7200)),
            ])
            let notifications = sim.apple.notifications
            let delivered = try notifications.record(
                .init(
                    bundleId: SimFixture.bundleId, notificationType: .subscribed, subtype: .initialBuy, transactionId: "3100",
                    sentDate: now.addingTimeInterval(-3600)))
            let failed = try notifications.record(
                .init(
                    bundleId: SimFixture.bundleId, notificationType: .subscribed, subtype: .initialBuy, transactionId: "3200",
                    sentDate: now.addingTimeInterval(-1800), sendAttemptResults: ["TIMED_OUT", "NO_RESPONSE"]))
            let outside = try notifications.record(
                .init(
                    bundleId: SimFixture.bundleId, notificationType: .didRenew, transactionId: "3100", sentDate: now.addingTimeInterval(-86_400)))

            let producer = try TestServices.makeProducer()
            let raw = try await TestServices.makeTopic("backfill-raw")
            let report = try await NotificationBackfill(client: sim.client, producer: producer, rawTopic: raw).run(
                target: SimFixture.target, since: now.addingTimeInterval(-7200), until: now, onlyFailures: false)
            #expect(report.fetched == 2)
            #expect(report.written == 2)
            #expect(report.undelivered == 1)
            #expect(report.byType == ["SUBSCRIBED/INITIAL_BUY": 2])

            let records = try await TopicReader.read(raw) { $0.count >= 2 }
            #expect(records.count == 2)
            let payloads = Set(records.map { String(decoding: $0.value, as: UTF8.self) })
            #expect(payloads == Set([delivered, failed].map { #"{"signedPayload":"\#($0.signedPayload)"}"# }))
            #expect(!payloads.contains { $0.contains(outside.signedPayload) })
            for record in records {
                let hex = SHA256.hash(data: record.value).map { String(format: "%02x", $0) }.joined()
                #expect(record.keyString == hex)
                #expect(record.headers.string(PipelineHeader.source) == "notification-history")
                #expect(record.headers.string(PipelineHeader.schema) == Topics.raw)
                #expect(record.headers.string(PipelineHeader.contentType) == "application/json")
                #expect(
                    record.headers.string(PipelineHeader.ingestedAt).flatMap {
                        try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse($0)
                    } != nil)
                #expect(record.headers.string(PipelineHeader.requestID).flatMap(UUID.init(uuidString:)) != nil)
            }

            let failuresTopic = try await TestServices.makeTopic("backfill-failures")
            let onlyFailures = try await NotificationBackfill(client: sim.client, producer: producer, rawTopic: failuresTopic).run(
                target: SimFixture.target, since: now.addingTimeInterval(-7200), until: now, onlyFailures: true)
            #expect(onlyFailures.fetched == 1)
            let failureRecords = try await TopicReader.read(failuresTopic) { $0.count >= 1 }
            #expect(failureRecords.map { String(decoding: $0.value, as: UTF8.self) } == [#"{"signedPayload":"\#(failed.signedPayload)"}"#])

            await #expect(throws: OperationsError.self) {
                try await NotificationBackfill(client: sim.client, producer: producer, rawTopic: raw).run(
                    target: SimFixture.target, since: now, until: now.addingTimeInterval(-60), onlyFailures: false)
            }
            await producer.close()
        }
    }

    @Test("lookup-order finds an order's transactions and customer, feeds them, and refuses an unknown order")
    func lookupOrder() async throws {
        try await RunningSimulator.with { sim in
            let customer = UUID()
            let now = Date()
            try sim.apple.store.upsert([
                SimFixture.transaction(original: "4100", id: "4100", purchased: now.addingTimeInterval(-600), token: customer),
                SimFixture.transaction(
                    original: "4200", id: "4200", purchased: now.addingTimeInterval(-600), type: .consumable, token: customer,
                    product: "com.example.coins.100"),
                SimFixture.transaction(original: "4300", id: "4300", purchased: now.addingTimeInterval(-600)),
            ])
            sim.apple.store.addOrder("MQ4X2Y7Z9", transactionIds: ["4100", "4200"])
            let job = OrderLookupJob(client: sim.client)
            let result = try await job.lookUp("MQ4X2Y7Z9", target: SimFixture.target)
            #expect(Set(result.transactions.compactMap(\.transactionId)) == ["4100", "4200"])
            #expect(result.customers == [customer])

            let verified = try await TestServices.makeTopic("order-verified")
            let producer = try TestServices.makeProducer()
            let keys = try await job.feed(result, target: SimFixture.target, producer: producer, verifiedTopic: verified)
            await producer.close()
            #expect(Set(keys) == ["Sandbox:4100", "Sandbox:4200"])
            let records = try await TopicReader.read(verified) { $0.count >= 2 }
            let decoded = try records.map { try VerifiedRecord.decode($0.value) }
            #expect(Set(decoded.compactMap(\.transactionId)) == ["4100", "4200"])
            #expect(decoded.allSatisfy { $0.kind == .transaction && $0.source == "reconcile" && $0.signedTransaction != nil })
            #expect(
                records.allSatisfy {
                    $0.headers.string(PipelineHeader.source) == "reconcile" && $0.headers.string(PipelineHeader.schema) == Topics.verified
                })

            await #expect {
                try await job.lookUp("UNKNOWN123", target: SimFixture.target)
            } throws: { ($0 as? OperationsError)?.code == .orderNotFound }
        }
    }
}
