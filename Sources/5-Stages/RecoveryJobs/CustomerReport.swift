import Foundation
import Logging
import PipelineOperations
import PipelineRecords
import PostgresNIO

/// Everything grant stored about one customer (read-only SQL over grant's schema): what support
/// needs to answer "why do I (not) have access?". `--json` prints it as one object whose keys are
/// the property names below (deploy/README.md, Operations).
public struct CustomerReport: Sendable, Hashable, OperatorJSONObject {
    /// A row of `current_entitlements`: entitled now.
    public struct Entitlement: Sendable, Hashable, OperatorJSONObject {
        public var environment: String
        public var key: String
        /// `nil` for a lifetime entitlement.
        public var activeUntil: Date?
        public var sources: [String]
    }

    /// A purchase the customer owns (`subscriptions.owner_customer_id`).
    public struct Subscription: Sendable, Hashable, OperatorJSONObject {
        public var environment: String
        public var originalTransactionId: String
        public var productType: String
        public var productId: String
        public var lifecycle: String
        public var expiresAt: Date?
        public var autoRenew: Bool?
        public var autoRenewProductId: String?
    }

    /// A transaction of one of the customer's purchases (`transactions`).
    public struct Transaction: Sendable, Hashable, OperatorJSONObject {
        public var environment: String
        public var transactionId: String
        public var originalTransactionId: String
        public var productId: String?
        public var productType: String?
        public var purchaseDate: Date?
        public var expiresDate: Date?
        public var revocationDate: Date?
        public var transactionReason: String?
        public var appAccountToken: String?
    }

    /// A row of `consumable_balances`.
    public struct Balance: Sendable, Hashable, OperatorJSONObject {
        public var environment: String
        public var key: String
        public var quantity: Int64
    }

    /// A row of `entitlement_changes` with its cause.
    public struct Change: Sendable, Hashable, OperatorJSONObject {
        public var environment: String
        public var seq: Int64
        public var key: String
        public var change: String
        public var active: Bool
        public var activeUntil: Date?
        public var reason: String
        public var causeType: String
        public var causeSubtype: String?
        public var causeEventKey: String
        public var recordedAt: Date
    }

    /// An event grant logged about one of the customer's purchases (`notifications`).
    public struct Notification: Sendable, Hashable, OperatorJSONObject {
        public var environment: String
        /// When the pipeline took it in (its `ingested-at` header), when the record carried one.
        public var ingestedAt: Date?
        /// When verify accepted it.
        public var verifiedAt: Date
        /// When grant wrote it.
        public var processedAt: Date
        /// Apple's type (`DID_RENEW`, …) or `APP_UPLOAD`.
        public var type: String
        public var subtype: String?
        /// `applied`, `stale` (older than what grant holds) or `recorded` (nothing to change).
        public var outcome: String
        public var note: String?
        public var source: String
        public var eventKey: String
        public var originalTransactionId: String?
        public var transactionId: String?
        /// The trace of the record that carried it (docs/configuration.md, "Tracing"), when it had one.
        public var traceId: String?
    }

    /// A customer's claim on a purchase (`ownership_claims`), the customer's own and other
    /// customers' claims on the same purchases.
    public struct OwnershipClaim: Sendable, Hashable, OperatorJSONObject {
        public var environment: String
        public var originalTransactionId: String
        public var customerId: String
        /// `owner`, `refused` or `superseded`.
        public var status: String
        /// Who owns the purchase now, when known.
        public var owner: String?
        public var verified: Bool
        public var firstClaimedAt: Date
        public var causeEventKey: String
        /// Why the claim has its status, in words (with grant's note on the event when it wrote one).
        public var reason: String
    }

    /// An Apple consumption request about one of the customer's purchases and its answer.
    public struct ConsumptionRequest: Sendable, Hashable, OperatorJSONObject {
        public var environment: String
        public var notificationUuid: String
        public var transactionId: String?
        public var originalTransactionId: String?
        public var reason: String?
        public var receivedAt: Date
        public var deadline: Date?
        /// `pending`, `sent`, `skipped`, `expired` or `failed`.
        public var status: String
        public var attempts: Int64
        public var sentAt: Date?
        public var deliveryStatus: String?
        public var refundPreference: String?
        public var lastError: String?
        public var note: String?
    }

    public var customerId: String
    public var entitlements: [Entitlement] = []
    public var subscriptions: [Subscription] = []
    public var transactions: [Transaction] = []
    public var balances: [Balance] = []
    public var changes: [Change] = []
    public var notifications: [Notification] = []
    public var ownershipClaims: [OwnershipClaim] = []
    public var consumptionRequests: [ConsumptionRequest] = []

    public var customerID: UUID { UUID(uuidString: customerId) ?? UUID() }

    public init(customerID: UUID) {
        customerId = customerID.uuidString.lowercased()
    }

    /// True when grant knows nothing about the customer.
    public var isEmpty: Bool {
        entitlements.isEmpty && subscriptions.isEmpty && balances.isEmpty && changes.isEmpty && transactions.isEmpty
            && ownershipClaims.isEmpty
    }

    /// The purchases (environment, originalTransactionId) that concern the customer: owned, claimed,
    /// naming the customer's token, or consumables granted to the customer. `$1` is the customer,
    /// `$2` the environment or NULL.
    static let purchases = """
        WITH purchases AS (
            SELECT environment, original_transaction_id AS otid FROM subscriptions WHERE owner_customer_id = $1::uuid
            UNION SELECT environment, original_transaction_id FROM ownership_claims WHERE customer_id = $1::uuid
            UNION SELECT environment, original_transaction_id FROM transactions WHERE app_account_token = $1::uuid
            UNION SELECT environment, transaction_id FROM consumable_grants WHERE customer_id = $1::uuid
        ), chosen AS (SELECT * FROM purchases WHERE $2::text IS NULL OR environment = $2::text)
        """

    static func query(_ sql: String, customer: String, environment: String?) -> PostgresQuery {
        var binds = PostgresBindings()
        binds.append(customer)
        if let environment { binds.append(environment) } else { binds.appendNull() }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    /// Reads the report; `environment` restricts it to `Sandbox` or `Production`.
    public static func load(customerID: UUID, environment: String? = nil, database: PostgresClient, logger: Logger) async throws -> CustomerReport {
        var report = CustomerReport(customerID: customerID)
        let id = report.customerId
        do {
            let entitlements = try await database.query(
                """
                SELECT environment, entitlement_key, active_until, array_to_string(source_ids, ',')
                FROM current_entitlements
                WHERE customer_id = \(id)::uuid AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                ORDER BY environment, entitlement_key
                """, logger: logger)
            for try await (env, key, until, sources) in entitlements.decode((String, String, Date?, String).self) {
                report.entitlements.append(
                    Entitlement(
                        environment: env, key: key, activeUntil: until, sources: sources.split(separator: ",").map(String.init)))
            }
            let subscriptions = try await database.query(
                """
                SELECT environment, original_transaction_id, product_type, product_id, lifecycle, expires_at, auto_renew_enabled,
                       auto_renew_product_id
                FROM subscriptions
                WHERE owner_customer_id = \(id)::uuid AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                ORDER BY environment, purchase_date, original_transaction_id
                """, logger: logger)
            for try await (env, original, type, product, lifecycle, expires, autoRenew, renewProduct) in subscriptions.decode(
                (String, String, String, String, String, Date?, Bool?, String?).self)
            {
                report.subscriptions.append(
                    Subscription(
                        environment: env, originalTransactionId: original, productType: type, productId: product, lifecycle: lifecycle,
                        expiresAt: expires, autoRenew: autoRenew, autoRenewProductId: renewProduct))
            }
            let transactions = try await database.query(
                query(
                    purchases + """
                        SELECT DISTINCT t.environment, t.transaction_id, t.original_transaction_id, t.product_id, t.product_type, t.purchase_date,
                               t.expires_date, t.revocation_date, t.transaction_reason, t.app_account_token::text
                        FROM transactions t JOIN chosen p ON t.environment = p.environment AND t.original_transaction_id = p.otid
                        ORDER BY t.environment, t.purchase_date, t.transaction_id
                        """, customer: id, environment: environment), logger: logger)
            for try await (env, transaction, original, product, type, purchased, expires, revoked, reason, token) in transactions.decode(
                (String, String, String, String?, String?, Date?, Date?, Date?, String?, String?).self)
            {
                report.transactions.append(
                    Transaction(
                        environment: env, transactionId: transaction, originalTransactionId: original, productId: product, productType: type,
                        purchaseDate: purchased, expiresDate: expires, revocationDate: revoked, transactionReason: reason, appAccountToken: token))
            }
            let balances = try await database.query(
                """
                SELECT environment, entitlement_key, quantity FROM consumable_balances
                WHERE customer_id = \(id)::uuid AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                ORDER BY environment, entitlement_key
                """, logger: logger)
            for try await (env, key, quantity) in balances.decode((String, String, Int64).self) {
                report.balances.append(Balance(environment: env, key: key, quantity: quantity))
            }
            let changes = try await database.query(
                """
                SELECT environment, seq, entitlement_key, change, active, active_until, reason, cause_type, cause_subtype,
                       cause_event_key, recorded_at
                FROM entitlement_changes
                WHERE customer_id = \(id)::uuid AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                ORDER BY environment, seq
                """, logger: logger)
            for try await (env, seq, key, change, active, until, reason, type, subtype, cause, recorded) in changes.decode(
                (String, Int64, String, String, Bool, Date?, String, String, String?, String, Date).self)
            {
                report.changes.append(
                    Change(
                        environment: env, seq: seq, key: key, change: change, active: active, activeUntil: until, reason: reason,
                        causeType: type, causeSubtype: subtype, causeEventKey: cause, recordedAt: recorded))
            }
            let notifications = try await database.query(
                query(
                    purchases + """
                        SELECT DISTINCT n.environment, n.ingested_at, n.verified_at, n.processed_at, n.notification_type, n.subtype, n.outcome,
                               n.note, n.source, n.event_key, n.original_transaction_id, n.transaction_id, n.trace_id
                        FROM notifications n JOIN chosen p ON n.environment = p.environment AND n.original_transaction_id = p.otid
                        ORDER BY n.verified_at, n.processed_at, n.event_key
                        """, customer: id, environment: environment), logger: logger)
            for try await (env, ingested, verified, processed, type, subtype, outcome, note, source, key, original, transaction, trace)
                in notifications.decode(
                    (String, Date?, Date, Date, String, String?, String, String?, String, String, String?, String?, String?).self)
            {
                report.notifications.append(
                    Notification(
                        environment: env, ingestedAt: ingested, verifiedAt: verified, processedAt: processed, type: type, subtype: subtype,
                        outcome: outcome, note: note, source: source, eventKey: key, originalTransactionId: original, transactionId: transaction,
                        traceId: trace))
            }
            let claims = try await database.query(
                query(
                    purchases + """
                        SELECT c.environment, c.original_transaction_id, c.customer_id::text, c.status, c.verified, c.first_claimed_at,
                               c.cause_event_key, n.note,
                               coalesce(s.owner_customer_id::text,
                                        (SELECT o.customer_id::text FROM ownership_claims o WHERE o.environment = c.environment
                                           AND o.original_transaction_id = c.original_transaction_id AND o.status = 'owner' LIMIT 1))
                        FROM ownership_claims c
                        JOIN chosen p ON c.environment = p.environment AND c.original_transaction_id = p.otid
                        LEFT JOIN subscriptions s ON s.environment = c.environment AND s.original_transaction_id = c.original_transaction_id
                        LEFT JOIN notifications n ON n.environment = c.environment AND n.event_key = c.cause_event_key
                        ORDER BY c.environment, c.original_transaction_id, c.first_claimed_at, c.customer_id
                        """, customer: id, environment: environment), logger: logger)
            for try await (env, original, customer, status, verified, claimed, cause, note, owner) in claims.decode(
                (String, String, String, String, Bool, Date, String, String?, String?).self)
            {
                var reason: String
                switch status {
                case "owner":
                    reason =
                        owner == customer || owner == nil
                        ? (verified ? "owns the purchase (Apple's newest token)" : "owns the purchase (upload)") : "owner"
                case "refused": reason = "refused: the purchase belongs to \(owner ?? "another customer")"
                case "superseded": reason = "superseded: the purchase was transferred to \(owner ?? "another customer")"
                default: reason = status
                }
                if let note, !note.isEmpty { reason += " (\(note))" }
                report.ownershipClaims.append(
                    OwnershipClaim(
                        environment: env, originalTransactionId: original, customerId: customer, status: status, owner: owner,
                        verified: verified, firstClaimedAt: claimed, causeEventKey: cause, reason: reason))
            }
            let requests = try await database.query(
                query(
                    purchases + """
                        SELECT DISTINCT r.environment, r.notification_uuid, r.transaction_id, r.original_transaction_id, r.reason, r.received_at,
                               r.deadline, r.status, r.attempts::bigint, r.sent_at, r.delivery_status, r.refund_preference, r.last_error, r.note
                        FROM consumption_requests r
                        JOIN chosen p ON r.environment = p.environment
                         AND (r.original_transaction_id = p.otid OR r.transaction_id = p.otid
                              OR r.transaction_id IN (SELECT t.transaction_id FROM transactions t
                                                      WHERE t.environment = p.environment AND t.original_transaction_id = p.otid))
                        ORDER BY r.received_at, r.notification_uuid
                        """, customer: id, environment: environment), logger: logger)
            for try await row in requests.decode(
                (String, String, String?, String?, String?, Date, Date?, String, Int64, Date?, String?, String?, String?, String?).self)
            {
                report.consumptionRequests.append(
                    ConsumptionRequest(
                        environment: row.0, notificationUuid: row.1, transactionId: row.2, originalTransactionId: row.3, reason: row.4,
                        receivedAt: row.5, deadline: row.6, status: row.7, attempts: row.8, sentAt: row.9, deliveryStatus: row.10,
                        refundPreference: row.11, lastError: row.12, note: row.13))
            }
        } catch {
            throw OperationsError(.storeFailed, "reading customer \(id) failed: \(String(reflecting: error).prefix(300))")
        }
        return report
    }

    /// The report as text for a terminal.
    public var text: String {
        func time(_ date: Date?) -> String { date.map(Timestamp.iso8601) ?? "-" }
        func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count) }
        var lines = ["customer \(customerId)", "", "entitlements now:"]
        if entitlements.isEmpty { lines.append("  (none)") }
        for e in entitlements {
            lines.append(
                "  " + pad(e.environment, 12) + pad(e.key, 28) + pad(e.activeUntil.map { "until " + Timestamp.iso8601($0) } ?? "lifetime", 32)
                    + "from " + e.sources.joined(separator: ", "))
        }
        lines += ["", "purchases:"]
        if subscriptions.isEmpty { lines.append("  (none)") }
        for s in subscriptions {
            var renew = "-"
            if let on = s.autoRenew {
                renew = on ? "auto-renew on" : "auto-renew off"
                if on, let next = s.autoRenewProductId, next != s.productId { renew += " → \(next)" }
            }
            lines.append(
                "  " + pad(s.environment, 12) + pad(s.originalTransactionId, 20) + pad(s.productId, 34) + pad(s.lifecycle, 15)
                    + pad("expires " + time(s.expiresAt), 34) + renew + "  (\(s.productType))")
        }
        lines += ["", "transactions:"]
        if transactions.isEmpty { lines.append("  (none)") }
        for t in transactions {
            lines.append(
                "  " + pad(t.environment, 12) + pad(t.transactionId, 20) + pad("original " + t.originalTransactionId, 29)
                    + pad(t.productId ?? "-", 34) + pad("purchased " + time(t.purchaseDate), 36)
                    + (t.expiresDate.map { "expires " + Timestamp.iso8601($0) + "  " } ?? "")
                    + (t.revocationDate.map { "REVOKED " + Timestamp.iso8601($0) + "  " } ?? "") + (t.transactionReason ?? ""))
        }
        lines += ["", "consumable balances:"]
        if balances.isEmpty { lines.append("  (none)") }
        for b in balances { lines.append("  " + pad(b.environment, 12) + pad(b.key, 28) + String(b.quantity)) }
        lines += ["", "ownership claims:"]
        if ownershipClaims.isEmpty { lines.append("  (none)") }
        for c in ownershipClaims {
            lines.append(
                "  " + pad(c.environment, 12) + pad(c.originalTransactionId, 20) + pad(c.customerId, 38) + pad(c.status, 11)
                    + pad("since " + Timestamp.iso8601(c.firstClaimedAt), 32) + c.reason)
        }
        lines += ["", "notifications (timeline):"]
        if notifications.isEmpty { lines.append("  (none)") }
        for n in notifications {
            let type = n.type + (n.subtype.map { "/\($0)" } ?? "")
            lines.append(
                "  " + pad(Timestamp.iso8601(n.verifiedAt), 26) + pad(type, 44) + pad(n.outcome, 9) + pad(n.source, 22)
                    + pad(n.originalTransactionId ?? "-", 20) + pad("trace " + (n.traceId ?? "-"), 39) + (n.note ?? ""))
        }
        lines += ["", "consumption requests:"]
        if consumptionRequests.isEmpty { lines.append("  (none)") }
        for r in consumptionRequests {
            lines.append(
                "  " + pad(Timestamp.iso8601(r.receivedAt), 26) + pad(r.transactionId ?? "-", 20) + pad("reason " + (r.reason ?? "-"), 24)
                    + pad(r.status, 9) + pad("deadline " + time(r.deadline), 36) + (r.sentAt.map { "sent " + Timestamp.iso8601($0) + " " } ?? "")
                    + (r.deliveryStatus.map { "delivery \($0) " } ?? "") + (r.refundPreference.map { "refund \($0) " } ?? "")
                    + (r.lastError.map { "error: \($0) " } ?? "") + (r.note ?? ""))
        }
        lines += ["", "change history:"]
        if changes.isEmpty { lines.append("  (none)") }
        for c in changes {
            let cause = c.causeType + (c.causeSubtype.map { "/\($0)" } ?? "")
            lines.append(
                "  " + pad("#\(c.seq)", 6) + pad(Timestamp.iso8601(c.recordedAt), 26) + pad(c.key, 24) + pad(c.change, 12)
                    + pad(c.active ? "active until " + time(c.activeUntil) : "inactive", 40) + pad(c.reason, 22)
                    + "cause \(cause) (\(c.causeEventKey))")
        }
        return lines.joined(separator: "\n")
    }
}
