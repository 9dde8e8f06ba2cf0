import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import Logging
import PipelineOperations
import PipelineRecords
import PostgresNIO

/// What one `appstorectl extend` did.
public struct RenewalExtensionResult: Sendable, Hashable, OperatorJSONObject {
    public var environment: String
    public var originalTransactionId: String
    public var requestIdentifier: String
    public var extendByDays: Int
    public var reasonCode: Int
    public var requestedBy: String
    /// The subscription's new end, as Apple answered.
    public var effectiveDate: Date?
    /// The verified record's key, once the subscription's latest transaction was fed to the pipeline.
    public var fed: String?
}

/// `appstorectl extend`: asks Apple to extend one subscription's renewal date (a goodwill extension
/// after a service issue), records who asked and what Apple answered in `renewal_extensions`, and
/// feeds the subscription's latest transaction as Apple now signs it to the verified topic (`source:
/// reconcile`), so grant moves the end at once; Apple's `RENEWAL_EXTENDED` notification follows and
/// changes nothing more.
public struct RenewalExtensionJob: Sendable {
    public let client: AppStoreServerAPIClient
    public let database: PostgresClient
    public let logger: Logger

    public init(client: AppStoreServerAPIClient, database: PostgresClient, logger: Logger) {
        self.client = client
        self.database = database
        self.logger = logger
    }

    public func extend(
        originalTransactionId: String, days: Int, reasonCode: Int, requestIdentifier: String, requestedBy: String,
        target: AppStoreServerAPIClient.Target, producer: KafkaProducer, verifiedTopic: String = Topics.verified
    ) async throws -> RenewalExtensionResult {
        var result = RenewalExtensionResult(
            environment: target.environment.rawValue, originalTransactionId: originalTransactionId, requestIdentifier: requestIdentifier,
            extendByDays: days, reasonCode: reasonCode, requestedBy: requestedBy)
        let request = ExtendRenewalDateRequest(extendByDays: Int32(days), extendReasonCode: Int32(reasonCode), requestIdentifier: requestIdentifier)
        do {
            let answer = try await client.extendRenewalDate(originalTransactionId: originalTransactionId, request, target: target)
            result.effectiveDate = answer.effectiveDate
        } catch {
            try await record(result, target: target, outcome: "refused", appleError: error.code.rawValue)
            throw OperationsError.api(error)
        }
        try await record(result, target: target, outcome: "extended", appleError: nil)
        let latest = try await SubscriptionReconciler.latestTransaction(
            originalTransactionId: originalTransactionId, client: client, target: target)
        result.fed = try await VerifiedRecord.fetched(latest, bundleId: target.bundleId).feed(to: producer, topic: verifiedTopic)
        return result
    }

    private func record(_ r: RenewalExtensionResult, target: AppStoreServerAPIClient.Target, outcome: String, appleError: String?) async throws {
        do {
            try await database.query(
                """
                INSERT INTO renewal_extensions (request_identifier, environment, bundle_id, original_transaction_id, extend_by_days, reason_code,
                    requested_by, outcome, effective_date, apple_error)
                VALUES (\(r.requestIdentifier), \(r.environment), \(target.bundleId), \(r.originalTransactionId), \(r.extendByDays),
                    \(Int16(r.reasonCode)), \(r.requestedBy), \(outcome), \(r.effectiveDate), \(appleError))
                ON CONFLICT (request_identifier) DO NOTHING
                """, logger: logger)
        } catch {
            throw OperationsError(.storeUnavailable, "recording the extension failed: \(String(reflecting: error).prefix(300))")
        }
    }
}
