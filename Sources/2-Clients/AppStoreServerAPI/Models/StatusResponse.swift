import AppStore

/// Apple's `StatusResponse` (Get All Subscription Statuses).
public struct StatusResponse: Codable, Hashable, Sendable {
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [SubscriptionGroupIdentifierItem]?
    public init(environment: AppStoreEnvironment?, bundleId: String?, appAppleId: Int64?, data: [SubscriptionGroupIdentifierItem]?) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }
}

/// One subscription group and the latest transaction of each of its subscriptions.
public struct SubscriptionGroupIdentifierItem: Codable, Hashable, Sendable {
    public var subscriptionGroupIdentifier: String?
    public var lastTransactions: [LastTransactionsItem]?
    public init(subscriptionGroupIdentifier: String?, lastTransactions: [LastTransactionsItem]?) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.lastTransactions = lastTransactions
    }
}

/// One subscription's status with its signed latest transaction and renewal info.
public struct LastTransactionsItem: Codable, Hashable, Sendable {
    public var status: SubscriptionStatus?
    public var originalTransactionId: String?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
    public init(status: SubscriptionStatus?, originalTransactionId: String?, signedTransactionInfo: String?, signedRenewalInfo: String?) {
        self.status = status
        self.originalTransactionId = originalTransactionId
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
    }
}
