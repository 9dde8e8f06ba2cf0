import AppStore
import AppStoreServerAPI
import Foundation
import PipelineRecords

/// Fetches the truth for one purchase: the customer's transaction history narrowed to the purchase
/// (by product type and subscription group, then by `originalTransactionId`), and for an
/// auto-renewable subscription its status, both at once. Every JWS is verified by the client.
/// When the client defers Sandbox requests (``RateLimitPolicy/sandboxMaximumWait``), both budgets
/// are checked first, so a deferred status call does not waste the history call sent beside it.
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
        try client.checkRoom(for: key.isAutoRenewable ? [.transactionHistory, .subscriptionStatuses] : [.transactionHistory], target: target)
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

    /// The record of a StoreKit 1 receipt (`source: app-receipt`, a transaction ID and no
    /// transaction) with Apple's signed copy of that transaction (Get Transaction Info, verified
    /// like every answer): from then on it is enriched like an upload of that transaction. A
    /// receipt routed to Production whose transaction Apple does not know there is looked up in
    /// Sandbox when the app has Sandbox credentials, as Apple advises for receipts.
    /// - Throws: ``AppStoreAPIError``.
    public func receiptTransaction(_ record: VerifiedRecord) async throws -> VerifiedRecord {
        guard let id = record.transactionId else {
            throw AppStoreAPIError(.invalidRequest, "the receipt record names no transaction")
        }
        var target = AppStoreServerAPIClient.Target(bundleId: record.bundleId, environment: record.environment)
        var answer = await fetch(id, target)
        if case .failure(let error) = answer, error.errorCode == 4_040_010, record.environment == .production,
            client.serves(record.bundleId, in: .sandbox)
        {
            target.environment = .sandbox
            answer = await fetch(id, target)
        }
        let fetched = try answer.get()
        var resolved = record
        resolved.environment = target.environment
        resolved.transaction = fetched.transaction
        resolved.transactionId = fetched.transaction.transactionId
        resolved.originalTransactionId = fetched.transaction.originalTransactionId
        resolved.signedTransaction = fetched.signed
        return resolved
    }

    private func fetch(_ id: String, _ target: AppStoreServerAPIClient.Target) async -> Result<VerifiedSignedTransaction, AppStoreAPIError> {
        do {
            return .success(try await client.signedTransactionInfo(transactionId: id, target: target))
        } catch {
            return .failure(error)
        }
    }
}
