import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import PipelineMessages
import PipelineOperations
import PipelineRecords

extension VerifiedRecord {
    /// A transaction an operator job fetched from the API (and the API client verified), as a
    /// verified record of kind `transaction`, so grant applies it like any other.
    static func fetched(
        _ fetched: VerifiedSignedTransaction, bundleId: String, source: String = PipelineHeader.Source.reconcile, at date: Date = Date()
    ) -> VerifiedRecord {
        let transaction = fetched.transaction
        return VerifiedRecord(
            kind: .transaction, source: source, environment: transaction.environment ?? .production, bundleId: transaction.bundleId ?? bundleId,
            originalTransactionId: transaction.originalTransactionId, transactionId: transaction.transactionId,
            transaction: transaction, signedTransaction: fetched.signed, verifiedAt: date)
    }
}

extension VerifiedRecord {
    /// Publishes the record to the verified topic for enrich and grant; returns its key.
    /// - Throws: ``OperationsError`` (`ops.unkeyed_record`, `kafka.broker_unavailable`).
    @discardableResult
    func feed(to producer: KafkaProducer, topic: String) async throws -> String? {
        do {
            _ = try await producer.send(try VerifiedMessage.make(self, topic: topic))
        } catch let error as VerifiedMessage.UnkeyedRecord {
            throw OperationsError(.unkeyedRecord, error.description)
        } catch {
            throw OperationsError(.brokerUnavailable, "writing to \(topic) failed: \(error)")
        }
        return key
    }
}

extension OperationsError {
    /// An App Store Server API failure as an operator error (Apple's code and message, never a token).
    public static func api(_ error: AppStoreAPIError) -> OperationsError {
        OperationsError(.init(rawValue: error.code.rawValue), error.description)
    }
}
