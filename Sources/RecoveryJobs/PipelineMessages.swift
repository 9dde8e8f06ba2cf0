import AppStore
import AppStoreServerAPI
import Crypto
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import StageRuntime

/// Builds records exactly as the stages write them, so a record an operator job feeds in is
/// indistinguishable from one ingest or verify produced (schemas/headers.md).
public enum PipelineMessages {
    /// A raw-topic record: body `{"signedPayload":…}`, keyed by the hex SHA-256 of the body like ingest.
    public static func raw(
        signedPayload: String, topic: String = Topics.raw, source: String = PipelineHeader.Source.notificationHistory,
        receivedAt: Date = Date()
    ) throws -> KafkaOutgoingMessage {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = Array(try encoder.encode(["signedPayload": signedPayload]))
        let key = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        return KafkaOutgoingMessage(topic: topic, key: key, value: body, headers: headers(source: source, schema: Topics.raw, at: receivedAt))
    }

    /// A verified-topic record keyed `<environment>:<originalTransactionId>` like verify's output.
    public static func verified(_ record: VerifiedRecord, topic: String = Topics.verified) throws -> KafkaOutgoingMessage {
        guard let key = record.key else {
            throw OperationsError(.unkeyedRecord, "a verified record needs an originalTransactionId or a notificationUUID")
        }
        return KafkaOutgoingMessage(
            topic: topic, key: key, value: try record.encoded(),
            headers: headers(source: record.source, schema: Topics.verified, at: record.verifiedAt))
    }

    /// A transaction fetched from the API as a verified record of kind `transaction`.
    public static func transactionRecord(
        _ fetched: VerifiedSignedTransaction, bundleID: String, source: String = PipelineHeader.Source.reconcile, at date: Date = Date()
    ) -> VerifiedRecord {
        let transaction = fetched.transaction
        return VerifiedRecord(
            kind: .transaction, source: source, environment: transaction.environment ?? .production, bundleId: transaction.bundleId ?? bundleID,
            originalTransactionId: transaction.originalTransactionId, transactionId: transaction.transactionId,
            transaction: transaction, signedTransaction: fetched.signed, verifiedAt: date)
    }

    static func headers(source: String, schema: String, at date: Date) -> [KafkaHeader] {
        [
            KafkaHeader(key: PipelineHeader.source, string: source),
            KafkaHeader(key: PipelineHeader.receivedAt, string: Timestamp.iso8601(date)),
            KafkaHeader(key: PipelineHeader.requestID, string: UUID().uuidString.lowercased()),
            KafkaHeader(key: PipelineHeader.contentType, string: "application/json"),
            KafkaHeader(key: PipelineHeader.schema, string: schema),
        ]
    }
}

extension OperationsError {
    /// An App Store Server API failure as an operator error (Apple's code and message, never a token).
    public static func api(_ error: AppStoreAPIError) -> OperationsError {
        OperationsError(.init(rawValue: error.code.rawValue), error.description)
    }
}
