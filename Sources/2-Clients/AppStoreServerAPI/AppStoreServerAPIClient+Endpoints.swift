import AppStore
import Foundation
import NIOHTTP1

extension AppStoreServerAPIClient {
    /// Get Transaction Info.
    public func transactionInfo(transactionId: String, target: Target) async throws(AppStoreAPIError) -> JWSTransactionDecodedPayload {
        try await signedTransactionInfo(transactionId: transactionId, target: target).transaction
    }

    /// Get Transaction Info, keeping the JWS Apple returned next to its verified payload (for feeding
    /// the transaction through the pipeline, as the operator tool's reconcile does).
    public func signedTransactionInfo(transactionId: String, target: Target) async throws(AppStoreAPIError) -> VerifiedSignedTransaction {
        let endpoint = AppStoreAPIEndpoint.transactionInfo
        let bytes = try await send(endpoint, target, method: .GET, path: "/inApps/v1/transactions/\(Self.segment(transactionId))")
        let response = try decode(TransactionInfoResponse.self, bytes, endpoint: endpoint)
        guard let signed = response.signedTransactionInfo else {
            throw AppStoreAPIError(.invalidResponse, "Get Transaction Info answered without signedTransactionInfo", endpoint: endpoint.rawValue)
        }
        return VerifiedSignedTransaction(transaction: try await verifyTransaction(signed, target: target, endpoint: endpoint), signed: signed)
    }

    /// One page of Get Transaction History v2; pass the previous page's `revision` to continue.
    public func transactionHistoryPage(
        transactionId: String, query: TransactionHistoryQuery = TransactionHistoryQuery(), revision: String? = nil, target: Target
    ) async throws(AppStoreAPIError) -> TransactionHistoryPage {
        let endpoint = AppStoreAPIEndpoint.transactionHistory
        let bytes = try await send(
            endpoint, target, method: .GET, path: "/inApps/v2/history/\(Self.segment(transactionId))", query: query.items(revision: revision))
        let response = try decode(HistoryResponse.self, bytes, endpoint: endpoint)
        try checkEnvelope(bundleId: response.bundleId, environment: response.environment, target: target, endpoint: endpoint)
        var transactions: [JWSTransactionDecodedPayload] = []
        for signed in response.signedTransactions ?? [] {
            transactions.append(try await verifyTransaction(signed, target: target, endpoint: endpoint))
        }
        let hasMore = response.hasMore ?? false
        if hasMore, response.revision == nil {
            throw AppStoreAPIError(.invalidResponse, "Get Transaction History said hasMore without a revision", endpoint: endpoint.rawValue)
        }
        return TransactionHistoryPage(transactions: transactions, revision: response.revision, hasMore: hasMore)
    }

    /// Get Transaction History v2, every page (`revision` until `hasMore` is false), in Apple's order.
    /// - Parameter maximumPages: A guard against an answer that never ends.
    public func transactionHistory(
        transactionId: String, query: TransactionHistoryQuery = TransactionHistoryQuery(), target: Target, maximumPages: Int = 1000
    ) async throws(AppStoreAPIError) -> [JWSTransactionDecodedPayload] {
        var all: [JWSTransactionDecodedPayload] = []
        var revision: String?
        for _ in 0..<maximumPages {
            let page = try await transactionHistoryPage(transactionId: transactionId, query: query, revision: revision, target: target)
            all += page.transactions
            guard page.hasMore else { return all }
            revision = page.revision
        }
        throw AppStoreAPIError(
            .invalidResponse, "Get Transaction History had more than \(maximumPages) pages", endpoint: AppStoreAPIEndpoint.transactionHistory.rawValue
        )
    }

    /// Get All Subscription Statuses, optionally only some statuses.
    public func allSubscriptionStatuses(
        transactionId: String, statuses: [SubscriptionStatus] = [], target: Target
    ) async throws(AppStoreAPIError) -> [VerifiedSubscriptionStatus] {
        let endpoint = AppStoreAPIEndpoint.subscriptionStatuses
        let bytes = try await send(
            endpoint, target, method: .GET, path: "/inApps/v1/subscriptions/\(Self.segment(transactionId))",
            query: statuses.map { ("status", "\($0.rawValue)") })
        let response = try decode(StatusResponse.self, bytes, endpoint: endpoint)
        try checkEnvelope(bundleId: response.bundleId, environment: response.environment, target: target, endpoint: endpoint)
        var result: [VerifiedSubscriptionStatus] = []
        for group in response.data ?? [] {
            for item in group.lastTransactions ?? [] {
                var entry = VerifiedSubscriptionStatus(
                    subscriptionGroupIdentifier: group.subscriptionGroupIdentifier,
                    originalTransactionId: item.originalTransactionId, status: item.status)
                if let signed = item.signedTransactionInfo {
                    entry.transaction = try await verifyTransaction(signed, target: target, endpoint: endpoint)
                }
                if let signed = item.signedRenewalInfo {
                    entry.renewalInfo = try await verifyRenewalInfo(signed, target: target, endpoint: endpoint)
                }
                result.append(entry)
            }
        }
        return result
    }

    /// One page of Get Refund History v2.
    public func refundHistoryPage(transactionId: String, revision: String? = nil, target: Target) async throws(AppStoreAPIError) -> RefundHistoryPage
    {
        let endpoint = AppStoreAPIEndpoint.refundHistory
        let bytes = try await send(
            endpoint, target, method: .GET, path: "/inApps/v2/refund/lookup/\(Self.segment(transactionId))",
            query: revision.map { [("revision", $0)] } ?? [])
        let response = try decode(RefundHistoryResponse.self, bytes, endpoint: endpoint)
        var transactions: [VerifiedSignedTransaction] = []
        for signed in response.signedTransactions ?? [] {
            transactions.append(
                VerifiedSignedTransaction(transaction: try await verifyTransaction(signed, target: target, endpoint: endpoint), signed: signed))
        }
        return RefundHistoryPage(signedTransactions: transactions, revision: response.revision, hasMore: response.hasMore ?? false)
    }

    /// Look Up Order ID (Apple serves it in Production only).
    public func lookUpOrderID(_ orderID: String, target: Target) async throws(AppStoreAPIError) -> OrderLookup {
        let endpoint = AppStoreAPIEndpoint.orderLookup
        let bytes = try await send(endpoint, target, method: .GET, path: "/inApps/v1/lookup/\(Self.segment(orderID))")
        let response = try decode(OrderLookupResponse.self, bytes, endpoint: endpoint)
        var transactions: [JWSTransactionDecodedPayload] = []
        for signed in response.signedTransactions ?? [] {
            transactions.append(try await verifyTransaction(signed, target: target, endpoint: endpoint))
        }
        return OrderLookup(isValid: response.status == 0, transactions: transactions)
    }

    /// One page of Get Notification History; pass the previous page's token, with the same request.
    public func notificationHistoryPage(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil, target: Target
    ) async throws(AppStoreAPIError) -> NotificationHistoryPage {
        let endpoint = AppStoreAPIEndpoint.notificationHistory
        let bytes = try await send(
            endpoint, target, method: .POST, path: "/inApps/v1/notifications/history",
            query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: try encode(request, endpoint: endpoint))
        let response = try decode(NotificationHistoryResponse.self, bytes, endpoint: endpoint)
        var entries: [NotificationHistoryEntry] = []
        for item in response.notificationHistory ?? [] {
            guard let signed = item.signedPayload else { continue }
            entries.append(
                NotificationHistoryEntry(
                    notification: try await verifyNotification(signed, target: target, endpoint: endpoint),
                    signedPayload: signed, sendAttempts: item.sendAttempts ?? []))
        }
        let hasMore = response.hasMore ?? false
        if hasMore, response.paginationToken == nil {
            throw AppStoreAPIError(.invalidResponse, "Get Notification History said hasMore without a paginationToken", endpoint: endpoint.rawValue)
        }
        return NotificationHistoryPage(entries: entries, paginationToken: response.paginationToken, hasMore: hasMore)
    }

    /// Get Notification History, every page.
    public func notificationHistory(
        _ request: NotificationHistoryRequest, target: Target, maximumPages: Int = 1000
    ) async throws(AppStoreAPIError) -> [NotificationHistoryEntry] {
        var all: [NotificationHistoryEntry] = []
        var token: String?
        for _ in 0..<maximumPages {
            let page = try await notificationHistoryPage(request, paginationToken: token, target: target)
            all += page.entries
            guard page.hasMore else { return all }
            token = page.paginationToken
        }
        throw AppStoreAPIError(
            .invalidResponse, "Get Notification History had more than \(maximumPages) pages",
            endpoint: AppStoreAPIEndpoint.notificationHistory.rawValue)
    }

    /// Request a Test Notification; returns the token to poll with ``testNotificationStatus(token:target:)``.
    public func requestTestNotification(target: Target) async throws(AppStoreAPIError) -> String {
        let endpoint = AppStoreAPIEndpoint.requestTestNotification
        let bytes = try await send(endpoint, target, method: .POST, path: "/inApps/v1/notifications/test")
        guard let token = try decode(SendTestNotificationResponse.self, bytes, endpoint: endpoint).testNotificationToken, !token.isEmpty else {
            throw AppStoreAPIError(.invalidResponse, "Request a Test Notification answered without a token", endpoint: endpoint.rawValue)
        }
        return token
    }

    /// Get Test Notification Status: the TEST notification, verified, and its delivery attempts.
    public func testNotificationStatus(token: String, target: Target) async throws(AppStoreAPIError) -> NotificationHistoryEntry {
        let endpoint = AppStoreAPIEndpoint.testNotificationStatus
        let bytes = try await send(endpoint, target, method: .GET, path: "/inApps/v1/notifications/test/\(Self.segment(token))")
        let response = try decode(CheckTestNotificationResponse.self, bytes, endpoint: endpoint)
        guard let signed = response.signedPayload else {
            throw AppStoreAPIError(.invalidResponse, "Get Test Notification Status answered without signedPayload", endpoint: endpoint.rawValue)
        }
        return NotificationHistoryEntry(
            notification: try await verifyNotification(signed, target: target, endpoint: endpoint), signedPayload: signed,
            sendAttempts: response.sendAttempts ?? [])
    }

    /// Send Consumption Information (v2); Apple answers 202.
    public func sendConsumptionInformation(
        transactionId: String, _ request: ConsumptionRequest, target: Target
    ) async throws(AppStoreAPIError) {
        let endpoint = AppStoreAPIEndpoint.sendConsumption
        _ = try await send(
            endpoint, target, method: .PUT, path: "/inApps/v2/transactions/consumption/\(Self.segment(transactionId))",
            body: try encode(request, endpoint: endpoint))
    }

    /// Extend a Subscription Renewal Date.
    public func extendRenewalDate(
        originalTransactionId: String, _ request: ExtendRenewalDateRequest, target: Target
    ) async throws(AppStoreAPIError) -> ExtendRenewalDateResponse {
        let endpoint = AppStoreAPIEndpoint.extendRenewalDate
        let bytes = try await send(
            endpoint, target, method: .PUT, path: "/inApps/v1/subscriptions/extend/\(Self.segment(originalTransactionId))",
            body: try encode(request, endpoint: endpoint))
        return try decode(ExtendRenewalDateResponse.self, bytes, endpoint: endpoint)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: Apple answers at once with the
    /// request identifier and extends in the background, sending `RENEWAL_EXTENDED` per extended
    /// subscription, `RENEWAL_EXTENSION/FAILURE` per one it could not extend and one
    /// `RENEWAL_EXTENSION/SUMMARY` at the end.
    public func massExtendRenewalDate(
        _ request: MassExtendRenewalDateRequest, target: Target
    ) async throws(AppStoreAPIError) -> MassExtendRenewalDateResponse {
        let endpoint = AppStoreAPIEndpoint.massExtendRenewalDate
        let bytes = try await send(
            endpoint, target, method: .POST, path: "/inApps/v1/subscriptions/extend/mass", body: try encode(request, endpoint: endpoint))
        return try decode(MassExtendRenewalDateResponse.self, bytes, endpoint: endpoint)
    }

    /// Get Status of Subscription Renewal Date Extensions: how far Apple is with a mass extension.
    public func massExtensionStatus(
        productId: String, requestIdentifier: String, target: Target
    ) async throws(AppStoreAPIError) -> MassExtendRenewalDateStatusResponse {
        let endpoint = AppStoreAPIEndpoint.massExtensionStatus
        let bytes = try await send(
            endpoint, target, method: .GET,
            path: "/inApps/v1/subscriptions/extend/mass/\(Self.segment(productId))/\(Self.segment(requestIdentifier))")
        return try decode(MassExtendRenewalDateStatusResponse.self, bytes, endpoint: endpoint)
    }

    /// Set App Account Token (API 1.16): sets or replaces the `appAccountToken` of a purchase (by its
    /// `originalTransactionId`; Apple refuses another transaction's ID with `4000187` and a family
    /// member's with `4000185`). Apple carries the token into the purchase's transactions and renewal
    /// info from then on; it sends no notification for it.
    public func setAppAccountToken(
        originalTransactionId: String, appAccountToken: UUID, target: Target
    ) async throws(AppStoreAPIError) {
        let endpoint = AppStoreAPIEndpoint.setAppAccountToken
        _ = try await send(
            endpoint, target, method: .PUT, path: "/inApps/v1/transactions/\(Self.segment(originalTransactionId))/appAccountToken",
            body: try encode(UpdateAppAccountTokenRequest(appAccountToken: appAccountToken), endpoint: endpoint))
    }

    /// Get App Transaction Info: the customer's app transaction (their download or purchase of the
    /// app itself, with its `appTransactionId`), found by any of their transaction IDs or by the
    /// `appTransactionId`. Verified like every answer; its `receiptType` must be the target's
    /// environment and its bundle ID the target's. Apple answers 404 `4040019` when there is none.
    public func appTransactionInfo(transactionId: String, target: Target) async throws(AppStoreAPIError) -> AppTransaction {
        let endpoint = AppStoreAPIEndpoint.appTransactionInfo
        let bytes = try await send(endpoint, target, method: .GET, path: "/inApps/v1/transactions/appTransactions/\(Self.segment(transactionId))")
        let response = try decode(AppTransactionInfoResponse.self, bytes, endpoint: endpoint)
        guard let signed = response.signedAppTransactionInfo else {
            throw AppStoreAPIError(
                .invalidResponse, "Get App Transaction Info answered without signedAppTransactionInfo", endpoint: endpoint.rawValue)
        }
        return try await verifyAppTransaction(signed, target: target, endpoint: endpoint)
    }
}
