import Foundation
import PostgresNIO

/// A purchase an authenticated upload or receipt gave to a customer while Apple's data names nobody:
/// what grant asks Apple to stamp the customer's `appAccountToken` on, when the app opted in.
public struct UnstampedPurchase: Sendable, Hashable {
    public var environment: String
    public var originalTransactionId: String
    public var customerId: UUID
    public var bundleId: String

    public init(environment: String, originalTransactionId: String, customerId: UUID, bundleId: String) {
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.customerId = customerId
        self.bundleId = bundleId
    }
}

extension EntitlementStore {
    /// Up to `limit` purchases of `apps` owned by an upload's claim (no Apple-signed token names
    /// anyone) and not yet asked about for that customer (`token_bindings`), earliest claim first.
    /// Family members' purchases are left out: Apple refuses to stamp them (`4000185`).
    public func unstampedPurchases(apps: [String], limit: Int) async throws(StoreError) -> [UnstampedPurchase] {
        do {
            return try await StoreDeadline.run(operationTimeout, "reading purchases to stamp") {
                let rows = try await self.client.query(
                    """
                    SELECT c.environment, c.original_transaction_id, c.customer_id, t.bundle_id
                    FROM ownership_claims c
                    CROSS JOIN LATERAL (
                        SELECT bundle_id, in_app_ownership_type FROM transactions t
                        WHERE t.original_transaction_id = c.original_transaction_id AND t.environment = c.environment
                        ORDER BY t.purchase_date DESC LIMIT 1) t
                    WHERE c.status = 'owner' AND NOT c.verified AND c.environment IN ('Sandbox', 'Production')
                      AND t.bundle_id = ANY(\(apps)) AND t.in_app_ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
                      AND NOT EXISTS (
                        SELECT 1 FROM token_bindings b WHERE b.environment = c.environment
                          AND b.original_transaction_id = c.original_transaction_id AND b.customer_id = c.customer_id)
                    ORDER BY c.first_claimed_at LIMIT \(limit)
                    """, logger: self.logger)
                var found: [UnstampedPurchase] = []
                for try await (environment, original, customer, bundle) in rows.decode((String, String, UUID, String).self) {
                    found.append(UnstampedPurchase(environment: environment, originalTransactionId: original, customerId: customer, bundleId: bundle))
                }
                return found
            }
        } catch {
            throw StoreError.classify(error)
        }
    }

    /// Records one request to stamp a token and Apple's answer (`set` or `refused` with its code).
    public func recordTokenBinding(
        _ purchase: UnstampedPurchase, requestedBy: String, outcome: String, appleError: String?
    ) async throws(StoreError) {
        do {
            try await StoreDeadline.run(operationTimeout, "recording a token binding") {
                try await self.client.query(
                    """
                    INSERT INTO token_bindings (environment, original_transaction_id, customer_id, requested_by, outcome, apple_error)
                    VALUES (\(purchase.environment), \(purchase.originalTransactionId), \(purchase.customerId), \(requestedBy), \(outcome), \(appleError))
                    """, logger: self.logger)
            }
        } catch {
            throw StoreError.classify(error)
        }
    }
}
