import Foundation
import PostgresNIO

/// A recorded `CONSUMPTION_REQUEST` (a customer asked Apple for a refund) together with what our
/// records say about its purchase: what the consumption responder needs to answer it.
public struct ConsumptionRequestRecord: Hashable, Sendable {
    /// Apple's deadline for an answer, counted from the notification's `signedDate`.
    public static let answerWindow: TimeInterval = 12 * 3600

    public var environment: String
    public var notificationUUID: String
    public var bundleId: String?
    public var transactionId: String?
    public var originalTransactionId: String?
    /// Apple's `consumptionRequestReason`, raw.
    public var reason: String?
    public var deadline: Date?
    /// Claims so far, this one included.
    public var attempts: Int
    /// Apple's product type of the transaction (`Consumable`, `Auto-Renewable Subscription`, …) when we hold it.
    public var productType: String?
    /// Whether grant delivered the purchase: a consumable granted to a customer, or an entitlement
    /// (active or since ended) from the purchase.
    public var delivered: Bool

    public init(
        environment: String, notificationUUID: String, bundleId: String?, transactionId: String?, originalTransactionId: String?,
        reason: String?, deadline: Date?, attempts: Int, productType: String?, delivered: Bool
    ) {
        self.environment = environment
        self.notificationUUID = notificationUUID
        self.bundleId = bundleId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.reason = reason
        self.deadline = deadline
        self.attempts = attempts
        self.productType = productType
        self.delivered = delivered
    }
}

/// How the responder left one request.
public enum ConsumptionRequestOutcome: Hashable, Sendable {
    /// Apple accepted the answer: the JSON body sent, its delivery status and refund preference.
    case sent(body: String, deliveryStatus: String, refundPreference: String?)
    /// A transient failure: try again after the delay (the request stays pending).
    case retry(after: Duration, error: String)
    /// Apple refused the answer for good.
    case failed(error: String)
    /// The deadline passed before an answer went out.
    case expired(note: String)
    /// Not answered on purpose (the app did not opt in, the request names no transaction, …).
    case skipped(note: String)
}

extension EntitlementStore {
    /// Takes up to `limit` pending requests that are due, earliest deadline first, and pushes their
    /// next attempt `lease` into the future, so a responder that dies mid-answer only delays them.
    /// Replicas never take the same request at once (`SKIP LOCKED`).
    public func claimConsumptionRequests(limit: Int, lease: Duration) async throws(StoreError) -> [ConsumptionRequestRecord] {
        let leaseSeconds = Self.seconds(lease)
        do {
            return try await StoreDeadline.run(operationTimeout, "claiming consumption requests") {
                // `t` is the requested transaction as grant stored it (its type, its purchase).
                let rows = try await self.client.query(
                    """
                    WITH due AS (
                        SELECT environment, notification_uuid FROM consumption_requests
                        WHERE status = 'pending' AND next_attempt_at <= now()
                        ORDER BY deadline NULLS LAST LIMIT \(limit) FOR UPDATE SKIP LOCKED),
                    claimed AS (
                        UPDATE consumption_requests c
                        SET attempts = c.attempts + 1, next_attempt_at = now() + make_interval(secs => \(leaseSeconds))
                        FROM due WHERE c.environment = due.environment AND c.notification_uuid = due.notification_uuid
                        RETURNING c.*)
                    SELECT c.environment, c.notification_uuid, c.bundle_id, c.transaction_id, p.original_transaction_id,
                        c.reason, c.deadline, c.attempts, t.product_type,
                        EXISTS (SELECT 1 FROM consumable_grants g WHERE g.environment = c.environment
                                AND g.transaction_id = c.transaction_id AND g.customer_id IS NOT NULL)
                        OR EXISTS (SELECT 1 FROM entitlements e WHERE e.environment = c.environment
                                AND e.source_id = p.original_transaction_id)
                    FROM claimed c
                    LEFT JOIN transactions t ON t.environment = c.environment AND t.transaction_id = c.transaction_id
                    CROSS JOIN LATERAL (SELECT coalesce(c.original_transaction_id, t.original_transaction_id) AS original_transaction_id) p
                    ORDER BY c.deadline NULLS LAST
                    """, logger: self.logger)
                var claimed: [ConsumptionRequestRecord] = []
                for try await (env, uuid, bundle, tid, otid, reason, deadline, attempts, type, delivered) in rows.decode(
                    (String, String, String?, String?, String?, String?, Date?, Int, String?, Bool).self
                ) {
                    claimed.append(
                        ConsumptionRequestRecord(
                            environment: env, notificationUUID: uuid, bundleId: bundle, transactionId: tid, originalTransactionId: otid,
                            reason: reason, deadline: deadline, attempts: attempts, productType: type, delivered: delivered))
                }
                return claimed
            }
        } catch {
            throw StoreError.classify(error)
        }
    }

    /// The requests still to answer (status pending) and the earliest of their deadlines.
    public func consumptionBacklog() async throws(StoreError) -> PendingConsumptionRequests {
        do {
            return try await StoreDeadline.run(operationTimeout, "reading the consumption backlog") {
                let rows = try await self.client.query(
                    "SELECT count(*), min(deadline) FROM consumption_requests WHERE status = 'pending'", logger: self.logger)
                var backlog = PendingConsumptionRequests(pending: 0, earliestDeadline: nil)
                for try await (count, deadline) in rows.decode((Int64, Date?).self) {
                    backlog = PendingConsumptionRequests(pending: Int(count), earliestDeadline: deadline)
                }
                return backlog
            }
        } catch {
            throw StoreError.classify(error)
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Records how the responder left `request`.
    public func finishConsumptionRequest(_ request: ConsumptionRequestRecord, _ outcome: ConsumptionRequestOutcome) async throws(StoreError) {
        let env = request.environment
        let uuid = request.notificationUUID
        let query: PostgresQuery
        switch outcome {
        case .sent(let body, let delivery, let preference):
            query = """
                UPDATE consumption_requests SET status = 'sent', sent_at = now(), request_body = \(body)::jsonb,
                    delivery_status = \(delivery), refund_preference = \(preference), last_error = NULL
                WHERE environment = \(env) AND notification_uuid = \(uuid)
                """
        case .retry(let after, let error):
            query = """
                UPDATE consumption_requests SET next_attempt_at = now() + make_interval(secs => \(Self.seconds(after))), last_error = \(error)
                WHERE environment = \(env) AND notification_uuid = \(uuid) AND status = 'pending'
                """
        case .failed(let error):
            query = """
                UPDATE consumption_requests SET status = 'failed', last_error = \(error)
                WHERE environment = \(env) AND notification_uuid = \(uuid)
                """
        case .expired(let note), .skipped(let note):
            let status = if case .expired = outcome { "expired" } else { "skipped" }
            query = """
                UPDATE consumption_requests SET status = \(status), note = \(note)
                WHERE environment = \(env) AND notification_uuid = \(uuid)
                """
        }
        do {
            try await StoreDeadline.run(operationTimeout, "recording a consumption answer") {
                _ = try await self.client.query(query, logger: self.logger)
            }
        } catch {
            throw StoreError.classify(error)
        }
    }
}
