import AppStore
import AppStoreServerAPI
import Foundation
import PipelineRecords

/// Fetches the truth for one purchase: the customer's transaction history narrowed to the purchase
/// (by product type and subscription group, then by `originalTransactionId`), and for an
/// auto-renewable subscription its status, both at once. Every JWS is verified by the client.
public struct PurchaseLookup: Sendable {
    public let client: AppStoreServerAPIClient
    let clock: @Sendable () -> Date

    public init(client: AppStoreServerAPIClient, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.clock = clock
    }

    /// - Throws: ``AppStoreAPIError``.
    public func lookUp(_ key: PurchaseKey) async throws -> PurchaseLookupResult {
        let requestedAt = clock()
        let target = AppStoreServerAPIClient.Target(bundleId: key.bundleId, environment: key.environment)
        var query = TransactionHistoryQuery()
        if let type = HistoryProductType(key.productType) { query.productTypes = [type] }
        if key.isAutoRenewable, let group = key.subscriptionGroupIdentifier { query.subscriptionGroupIdentifiers = [group] }
        async let history = client.transactionHistory(transactionId: key.originalTransactionId, query: query, target: target)
        async let statusList = statuses(of: key, target: target)
        let transactions = try await history.filter { $0.originalTransactionId == key.originalTransactionId }
        let entry = try await statusList.first { $0.originalTransactionId == key.originalTransactionId }
        let snapshot = entry.flatMap { entry in
            entry.status.map {
                SubscriptionStatusSnapshot(
                    subscriptionGroupIdentifier: entry.subscriptionGroupIdentifier, status: $0, transaction: entry.transaction,
                    renewalInfo: entry.renewalInfo)
            }
        }
        return PurchaseLookupResult(
            history: transactions, subscriptionStatus: snapshot,
            fetchedAt: AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: clock())), requestedAt: requestedAt)
    }

    /// Get All Subscription Statuses, for auto-renewables only.
    func statuses(of key: PurchaseKey, target: AppStoreServerAPIClient.Target) async throws -> [VerifiedSubscriptionStatus] {
        guard key.isAutoRenewable else { return [] }
        return try await client.allSubscriptionStatuses(transactionId: key.originalTransactionId, target: target)
    }
}
