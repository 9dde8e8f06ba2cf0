import AppStore
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import GrantTestSupport
import KafkaClient
import NIOCore
import NIOHTTP1
import PipelineOperations
import PipelineRecords
import TestSupport
import Testing

/// Apple's `EXTERNAL_PURCHASE_TOKEN` through all four stages to the changes topic, for the service
/// that reports external purchases to Apple.
@Suite(
    "External purchase tokens end to end", .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct ExternalPurchaseTokenEndToEndTests {
    struct Published: Decodable {
        struct Cause: Decodable {
            var type: String
            var subtype: String?
            var notificationUUID: String?
        }
        var change: String
        var environment: String
        var customerId: String?
        var seq: Int64?
        var externalPurchaseToken: ExternalPurchaseToken
        var cause: Cause
    }

    @Test(
        "a token signed by the simulated Apple and posted twice reaches entitlements.changes.v1 once, keyed by its ID, without a customer or seq"
    )
    func reachesTheChangeStream() async throws {
        try await PipelineUnderTest.with { pipeline in
            let signer = try SimulatedApple(stateDirectory: pipeline.stateDirectory)
            let id = "SANDBOX_\(UUID().uuidString.lowercased())"
            let notification = try signer.notifications.record(
                SeedNotificationRequest(
                    bundleId: pipeline.bundleId, notificationType: .externalPurchaseToken, subtype: .unreported,
                    externalPurchaseToken: ExternalPurchaseToken(externalPurchaseId: id, tokenCreationDate: 1_698_148_950_000, tokenType: .services)))
            let body = try JSONEncoder().encode(["signedPayload": notification.signedPayload])
            for _ in 0..<2 {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v2/notifications")
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: Array(body)))
                let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
                _ = try await response.body.collect(upTo: 1 << 16)
                #expect(response.status.code == 200)
            }

            let deadline = ContinuousClock.now + .seconds(180)
            while true {
                let logged = try await pipeline.loggedEvents()
                if logged >= 1, try await pipeline.unpublishedChanges() == 0 { break }
                guard ContinuousClock.now < deadline else { throw TestSupportError("the token was never granted and published") }
                try await Task.sleep(for: .milliseconds(250))
            }

            let client = TestServices.clientConfiguration("e2e-external-purchase")
            let topic = try #require(pipeline.topics[Topics.entitlementChanges])
            let partitions = try await KafkaGroupOffsets(configuration: client).partitions(of: topic)
            let records = try await KafkaTopicScanner(configuration: client, idle: .seconds(3)).scan(
                Dictionary(uniqueKeysWithValues: partitions.map { ($0, Int64?.none) }))
            #expect(records.count == 1, "one event for the token, whatever the posts")
            let record = try #require(records.first)
            #expect(record.key.map { String(decoding: $0, as: UTF8.self) } == "Sandbox:external-purchase:\(id)")
            #expect(record.headers.string("seq") == nil && record.headers.string("customer-id") == nil)
            #expect(record.headers.string(PipelineHeader.schema) == "entitlements.changes.v1")
            let published = try JSONDecoder().decode(Published.self, from: Data(record.value))
            #expect(published.change == "external_purchase_token" && published.environment == "Sandbox")
            #expect(published.customerId == nil && published.seq == nil)
            #expect(published.externalPurchaseToken.externalPurchaseId == id)
            #expect(published.externalPurchaseToken.bundleId == pipeline.bundleId)
            #expect(published.cause.type == "EXTERNAL_PURCHASE_TOKEN" && published.cause.subtype == "UNREPORTED")
            #expect(published.cause.notificationUUID == notification.notificationUUID)

            let errors = try await SchemaValidator.errors(of: records.map(\.value), schema: "entitlements.changes.v1.schema.json")
            #expect(errors.isEmpty, "\(errors)")
            let audit = try ChangeStreamAudit(messages: records)
            #expect(audit.isConsistent && audit.externalPurchaseTokens == 1 && audit.customers == 0)
        }
    }
}
