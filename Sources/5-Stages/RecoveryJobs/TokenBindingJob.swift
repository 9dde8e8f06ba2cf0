import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import Logging
import PipelineMessages
import PipelineOperations
import PipelineRecords
import PostgresNIO

/// What one `appstorectl bind` did.
public struct TokenBindingResult: Sendable, Hashable, OperatorJSONObject {
    public var environment: String
    public var originalTransactionId: String
    public var customerId: String
    public var requestedBy: String
    /// The purchase's transaction as Apple signs it after the change (it names the customer).
    public var transactionId: String?
    /// The verified record's key, once fed to the pipeline.
    public var fed: String?
}

/// `appstorectl bind`: asks Apple to stamp a customer's `appAccountToken` on a purchase (Set App
/// Account Token), records who asked in `token_bindings`, then feeds the purchase's transaction as
/// Apple now signs it to the verified topic (`source: reconcile`), so enrich fetches its history and
/// grant gives the purchase to the customer Apple now names (the newest Apple-signed token wins).
/// Apple sends no notification of its own for the change.
public struct TokenBindingJob: Sendable {
    public let client: AppStoreServerAPIClient
    public let database: PostgresClient
    public let logger: Logger

    public init(client: AppStoreServerAPIClient, database: PostgresClient, logger: Logger) {
        self.client = client
        self.database = database
        self.logger = logger
    }

    public func bind(
        customer: UUID, originalTransactionId: String, requestedBy: String, target: AppStoreServerAPIClient.Target,
        producer: KafkaProducer, verifiedTopic: String = Topics.verified
    ) async throws -> TokenBindingResult {
        var result = TokenBindingResult(
            environment: target.environment.rawValue, originalTransactionId: originalTransactionId, customerId: customer.uuidString.lowercased(),
            requestedBy: requestedBy)
        do {
            try await client.setAppAccountToken(originalTransactionId: originalTransactionId, appAccountToken: customer, target: target)
        } catch {
            try await record(result, outcome: "refused", appleError: error.code.rawValue)
            throw OperationsError.api(error)
        }
        try await record(result, outcome: "set", appleError: nil)
        let fetched: VerifiedSignedTransaction
        do {
            fetched = try await client.signedTransactionInfo(transactionId: originalTransactionId, target: target)
        } catch {
            throw OperationsError.api(error)
        }
        result.transactionId = fetched.transaction.transactionId
        result.fed = try await VerifiedRecord.fetched(fetched, bundleId: target.bundleId).feed(to: producer, topic: verifiedTopic)
        return result
    }

    private func record(_ result: TokenBindingResult, outcome: String, appleError: String?) async throws {
        do {
            try await database.query(
                """
                INSERT INTO token_bindings (environment, original_transaction_id, customer_id, requested_by, outcome, apple_error)
                VALUES (\(result.environment), \(result.originalTransactionId), \(result.customerId)::uuid, \(result.requestedBy), \(outcome), \(appleError))
                """, logger: logger)
        } catch {
            throw OperationsError(.storeUnavailable, "recording the binding failed: \(String(reflecting: error).prefix(300))")
        }
    }
}
