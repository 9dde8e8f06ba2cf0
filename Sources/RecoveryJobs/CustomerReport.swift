import Foundation
import Logging
import PipelineOperations
import PostgresNIO
import StageRuntime

/// Everything grant stored about one customer (read-only SQL over grant's schema): what support
/// needs to answer "why do I (not) have access?".
public struct CustomerReport: Sendable, Hashable {
    /// A row of `current_entitlements`: entitled now.
    public struct Entitlement: Sendable, Hashable {
        public var environment: String
        public var key: String
        /// `nil` for a lifetime entitlement.
        public var activeUntil: Date?
        public var sources: [String]
    }

    /// A purchase the customer owns (`subscriptions.owner_customer_id`).
    public struct Subscription: Sendable, Hashable {
        public var environment: String
        public var originalTransactionId: String
        public var productType: String
        public var productId: String
        public var lifecycle: String
        public var expiresAt: Date?
        public var autoRenew: Bool?
        public var autoRenewProductId: String?
    }

    /// A row of `consumable_balances`.
    public struct Balance: Sendable, Hashable {
        public var environment: String
        public var key: String
        public var quantity: Int64
    }

    /// A row of `entitlement_changes` with its cause.
    public struct Change: Sendable, Hashable {
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

    public var customerID: UUID
    public var entitlements: [Entitlement] = []
    public var subscriptions: [Subscription] = []
    public var balances: [Balance] = []
    public var changes: [Change] = []

    /// True when grant knows nothing about the customer.
    public var isEmpty: Bool { entitlements.isEmpty && subscriptions.isEmpty && balances.isEmpty && changes.isEmpty }

    /// Reads the report; `environment` restricts it to `Sandbox` or `Production`.
    public static func load(customerID: UUID, environment: String? = nil, database: PostgresClient, logger: Logger) async throws -> CustomerReport {
        var report = CustomerReport(customerID: customerID)
        let id = customerID.uuidString.lowercased()
        do {
            let entitlements = try await database.query(
                """
                SELECT environment, entitlement_key, active_until, array_to_string(source_ids, ',')
                FROM current_entitlements
                WHERE customer_id = \(id)::uuid AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                ORDER BY environment, entitlement_key
                """, logger: logger)
            for try await (env, key, until, sources) in entitlements.decode((String, String, Date?, String).self) {
                report.entitlements.append(Entitlement(
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
                report.subscriptions.append(Subscription(
                    environment: env, originalTransactionId: original, productType: type, productId: product, lifecycle: lifecycle,
                    expiresAt: expires, autoRenew: autoRenew, autoRenewProductId: renewProduct))
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
                report.changes.append(Change(
                    environment: env, seq: seq, key: key, change: change, active: active, activeUntil: until, reason: reason,
                    causeType: type, causeSubtype: subtype, causeEventKey: cause, recordedAt: recorded))
            }
        } catch {
            throw OperationsError("database_error", "reading customer \(id) failed: \(String(reflecting: error).prefix(300))")
        }
        return report
    }

    /// The report as text for a terminal.
    public var text: String {
        func time(_ date: Date?) -> String { date.map(Timestamp.iso8601) ?? "-" }
        func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count) }
        var lines = ["customer \(customerID.uuidString.lowercased())", "", "entitlements now:"]
        if entitlements.isEmpty { lines.append("  (none)") }
        for e in entitlements {
            lines.append("  " + pad(e.environment, 12) + pad(e.key, 28) + pad(e.activeUntil.map { "until " + Timestamp.iso8601($0) } ?? "lifetime", 32)
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
            lines.append("  " + pad(s.environment, 12) + pad(s.originalTransactionId, 20) + pad(s.productId, 34) + pad(s.lifecycle, 15)
                + pad("expires " + time(s.expiresAt), 34) + renew + "  (\(s.productType))")
        }
        lines += ["", "consumable balances:"]
        if balances.isEmpty { lines.append("  (none)") }
        for b in balances { lines.append("  " + pad(b.environment, 12) + pad(b.key, 28) + String(b.quantity)) }
        lines += ["", "change history:"]
        if changes.isEmpty { lines.append("  (none)") }
        for c in changes {
            let cause = c.causeType + (c.causeSubtype.map { "/\($0)" } ?? "")
            lines.append("  " + pad("#\(c.seq)", 6) + pad(Timestamp.iso8601(c.recordedAt), 26) + pad(c.key, 24) + pad(c.change, 12)
                + pad(c.active ? "active until " + time(c.activeUntil) : "inactive", 40) + pad(c.reason, 22) + "cause \(cause) (\(c.causeEventKey))")
        }
        return lines.joined(separator: "\n")
    }
}
