import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import Logging
import PipelineMessages
import PipelineOperations
import PipelineRecords
import PostgresNIO

/// A subscription grant still holds as running although its end passed (plus the leeway) and no
/// event about it arrived since: Apple's notification was probably never delivered.
public struct OverdueSubscription: Sendable, Hashable, OperatorJSONObject {
    public var environment: String
    public var originalTransactionId: String
    public var latestTransactionId: String?
    public var productId: String
    /// From the latest stored transaction; `nil` when grant has no copy of it.
    public var bundleId: String?
    /// Grant's lifecycle: `active`, `grace_period` or `billing_retry`.
    public var lifecycle: String
    /// The end that passed: the grace period's end in grace, the expiry otherwise.
    public var endsAt: Date
    public var ownerCustomerId: String?
}

/// One subscription reconcile handled.
public struct ReconcileItem: Sendable, Hashable, OperatorJSONObject {
    public var subscription: OverdueSubscription
    /// The latest transaction Apple returned (nil on failure or in a dry run).
    public var transactionId: String?
    /// The verified record's key, when queued.
    public var key: String?
    /// Why it was not queued, when it was not.
    public var failure: String?
}

/// `appstorectl reconcile`: the safety net for notifications Apple never delivered. Finds overdue
/// subscriptions in grant's tables, fetches each one's latest transaction from the API (verified),
/// and publishes it to the verified topic as a `transaction` record with `source: reconcile`; enrich
/// then fetches the purchase's full history and status, and grant applies the truth.
public struct SubscriptionReconciler: Sendable {
    public let database: PostgresClient
    public let logger: Logger

    public init(database: PostgresClient, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The subscriptions whose end plus `leeway` is before `now`, with no event signed after that end.
    public func overdue(bundleId: String? = nil, leeway: Duration, now: Date = Date()) async throws -> [OverdueSubscription] {
        let leewaySeconds = Double(leeway.components.seconds)
        let query: PostgresQuery = """
            SELECT s.environment, s.original_transaction_id, s.latest_transaction_id, s.product_id, t.bundle_id, s.lifecycle,
                   e.ends_at, s.owner_customer_id::text
            FROM subscriptions s
            CROSS JOIN LATERAL (SELECT CASE WHEN s.lifecycle = 'grace_period' AND s.grace_period_expires_at IS NOT NULL
                                            THEN s.grace_period_expires_at ELSE s.expires_at END AS ends_at) e
            LEFT JOIN transactions t ON t.environment = s.environment AND t.transaction_id = s.latest_transaction_id
            WHERE s.product_type = 'Auto-Renewable Subscription'
              AND s.lifecycle IN ('active', 'grace_period', 'billing_retry')
              AND e.ends_at IS NOT NULL
              AND e.ends_at + \(leewaySeconds)::float8 * interval '1 second' < \(now)
              AND NOT EXISTS (
                  SELECT 1 FROM notifications n
                  WHERE n.environment = s.environment AND n.original_transaction_id = s.original_transaction_id
                    AND n.signed_date > e.ends_at)
              AND (\(bundleId)::text IS NULL OR t.bundle_id = \(bundleId)::text)
            ORDER BY s.environment, e.ends_at, s.original_transaction_id
            """
        var result: [OverdueSubscription] = []
        do {
            let rows = try await database.query(query, logger: logger)
            for try await (environment, original, latest, product, bundle, lifecycle, endsAt, owner) in rows.decode(
                (String, String, String?, String, String?, String, Date, String?).self)
            {
                result.append(
                    OverdueSubscription(
                        environment: environment, originalTransactionId: original, latestTransactionId: latest, productId: product,
                        bundleId: bundle, lifecycle: lifecycle, endsAt: endsAt, ownerCustomerId: owner))
            }
        } catch {
            throw OperationsError(.storeFailed, "reading overdue subscriptions failed: \(String(reflecting: error).prefix(300))")
        }
        return result
    }

    /// Fetches each subscription's truth and queues it on the verified topic (nothing is sent when
    /// `producer` is nil: a dry run). A failure of one subscription is reported and the rest continue.
    public static func queue(
        _ subscriptions: [OverdueSubscription], client: AppStoreServerAPIClient, producer: KafkaProducer?,
        verifiedTopic: String = Topics.verified, defaultBundleId: String? = nil
    ) async -> [ReconcileItem] {
        var items: [ReconcileItem] = []
        for subscription in subscriptions {
            var item = ReconcileItem(subscription: subscription)
            guard let bundleId = subscription.bundleId ?? defaultBundleId else {
                item.failure = OperationsError(.unknownBundle, "grant stored no transaction naming the app; give --app").description
                items.append(item)
                continue
            }
            guard producer != nil else {
                items.append(item)
                continue
            }
            let target = AppStoreServerAPIClient.Target(bundleId: bundleId, environment: AppStoreEnvironment(rawValue: subscription.environment))
            do {
                let fetched = try await latestTransaction(
                    originalTransactionId: subscription.originalTransactionId, known: subscription.latestTransactionId, client: client,
                    target: target)
                let record = VerifiedRecord.fetched(fetched, bundleId: bundleId)
                let message = try VerifiedMessage.make(record, topic: verifiedTopic)
                _ = try await producer?.send(message)
                item.transactionId = fetched.transaction.transactionId
                item.key = record.key
            } catch let error as OperationsError {
                item.failure = error.description
            } catch let error as VerifiedMessage.UnkeyedRecord {
                item.failure = OperationsError(.unkeyedRecord, error.description).description
            } catch {
                item.failure = OperationsError(.brokerUnavailable, "\(error)").description
            }
            items.append(item)
        }
        return items
    }

    /// The purchase's latest transaction from Get All Subscription Statuses, fetched again with
    /// Get Transaction Info for its JWS (`known`, then the original, when Apple names none).
    static func latestTransaction(
        originalTransactionId: String, known: String? = nil, client: AppStoreServerAPIClient, target: AppStoreServerAPIClient.Target
    ) async throws -> VerifiedSignedTransaction {
        do {
            let statuses = try await client.allSubscriptionStatuses(transactionId: originalTransactionId, target: target)
            let latest = statuses.first { $0.originalTransactionId == originalTransactionId }?.transaction?.transactionId
            return try await client.signedTransactionInfo(transactionId: latest ?? known ?? originalTransactionId, target: target)
        } catch {
            throw OperationsError.api(error)
        }
    }
}
