import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EnrichService
import Foundation
import KafkaClient
import Logging
import PipelineRecords
import StageRuntime
import TestSupport

/// Verified records as the verify stage writes them, and the stage wired to a simulator.
enum EnrichFixture {
    /// A verified notification about `transaction`.
    static func notification(
        _ transaction: JWSTransactionDecodedPayload, type: NotificationType = .didRenew, subtype: NotificationSubtype? = nil,
        uuid: String = UUID().uuidString.lowercased()
    ) -> VerifiedRecord {
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: type, subtype: subtype, notificationUUID: uuid,
            data: NotificationData(environment: .sandbox, bundleId: SimFixture.bundleId, signedTransactionInfo: "h.p.s", status: .active),
            version: "2.0", signedDate: SimFixture.now())
        return VerifiedRecord(
            kind: .notification, source: "apple-webhook", environment: .sandbox, bundleId: SimFixture.bundleId,
            originalTransactionId: transaction.originalTransactionId, transactionId: transaction.transactionId, notificationUUID: uuid,
            notification: payload, transaction: transaction, signedPayload: "h.p.s", verifiedAt: SimFixture.now())
    }

    /// A verified app upload of `transaction` with the app's hints.
    static func upload(_ transaction: JWSTransactionDecodedPayload, hint: UUID?) -> VerifiedRecord {
        VerifiedRecord(
            kind: .transaction, source: "app-upload", environment: .sandbox, bundleId: SimFixture.bundleId,
            originalTransactionId: transaction.originalTransactionId, transactionId: transaction.transactionId, transaction: transaction,
            hints: AppUploadHints(appAccountToken: hint, userId: "user-1"), signedTransaction: "h.p.s", verifiedAt: SimFixture.now())
    }

    /// A TEST notification: no purchase.
    static func testNotification() -> VerifiedRecord {
        let uuid = UUID().uuidString.lowercased()
        return VerifiedRecord(
            kind: .notification, source: "apple-webhook", environment: .sandbox, bundleId: SimFixture.bundleId, notificationUUID: uuid,
            notification: ResponseBodyV2DecodedPayload(
                notificationType: .test, notificationUUID: uuid, data: NotificationData(environment: .sandbox, bundleId: SimFixture.bundleId),
                version: "2.0", signedDate: SimFixture.now()),
            signedPayload: "h.p.s", verifiedAt: SimFixture.now())
    }

    static func message(_ record: VerifiedRecord, offset: Int64 = 0, topic: String = "verified") throws -> KafkaMessage {
        KafkaMessage(
            topic: topic, partition: 0, offset: offset, key: record.key.map { Array($0.utf8) }, value: try record.encoded(),
            headers: [
                KafkaHeader(key: PipelineHeader.source, string: record.source), KafkaHeader(key: PipelineHeader.schema, string: Topics.verified),
            ], timestamp: nil)
    }

    static func outgoing(_ record: VerifiedRecord, topic: String) throws -> KafkaOutgoingMessage {
        KafkaOutgoingMessage(
            topic: topic, key: record.key, value: try record.encoded(),
            headers: [
                KafkaHeader(key: PipelineHeader.source, string: record.source), KafkaHeader(key: PipelineHeader.schema, string: Topics.verified),
            ])
    }

    static func stage(
        _ sim: RunningSimulator, outputTopic: String = Topics.enriched, coalesce: Bool = true,
        rateLimits: RateLimitPolicy = RateLimitPolicy(scale: 1000), historyWait: Duration = .seconds(60),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws -> EnrichStage {
        EnrichStage(
            lookup: PurchaseLookup(client: try SimFixture.client(sim, rateLimits: rateLimits)), outputTopic: outputTopic, coalesce: coalesce,
            historyWait: historyWait, logger: TestServices.logger, clock: clock)
    }

    /// A notification about a purchase that carries no transaction of its own (only renewal info),
    /// so nothing Apple signed stands in for its history.
    static func withoutTransaction(_ transaction: JWSTransactionDecodedPayload) -> VerifiedRecord {
        var record = notification(transaction)
        record.transaction = nil
        record.transactionId = nil
        record.renewalInfo = JWSRenewalInfoDecodedPayload(originalTransactionId: transaction.originalTransactionId, productId: transaction.productId)
        return record
    }

    /// Produces verified records in order.
    static func produce(_ records: [VerifiedRecord], to topic: String) async throws {
        let producer = try TestServices.makeProducer()
        _ = try await producer.sendAll(try records.map { try outgoing($0, topic: topic) })
        await producer.close()
    }
}
