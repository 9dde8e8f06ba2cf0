import AppStore
import AppStoreServerAPI
import Foundation

/// One purchase record the simulator holds: Apple's unsigned transaction plus what Apple knows but
/// does not sign (which customer account it belongs to, when it was last modified).
public struct SimulatedTransaction: Hashable, Sendable {
    /// The transaction as it will be signed.
    public var payload: JWSTransactionDecodedPayload
    /// The customer account (Apple's history and statuses are per customer and app).
    public var customerID: String
    /// Increases on every change; Apple's history sorts by modification, not by purchase date.
    public var modifiedSequence: Int
}

/// What the simulator overrides for one auto-renewable subscription (by `originalTransactionId`);
/// anything not set is derived from the transactions and the clock.
public struct SimulatedSubscriptionOverride: Codable, Hashable, Sendable {
    /// Apple's status (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    public var status: SubscriptionStatus?
    /// The renewal info to sign; `originalTransactionId`, `environment` and `signedDate` are filled in.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    public init(status: SubscriptionStatus? = nil, renewalInfo: JWSRenewalInfoDecodedPayload? = nil) {
        self.status = status
        self.renewalInfo = renewalInfo
    }
}

/// A notification as first sent, signed at that moment (Apple's history shows the state then).
public struct SimulatedNotification: Hashable, Sendable {
    public var bundleId: String
    public var notificationUUID: String
    public var notificationType: NotificationType
    public var subtype: NotificationSubtype?
    /// The transaction it was about, when any.
    public var transactionId: String?
    public var originalTransactionId: String?
    public var firstSentDate: Date
    public var signedPayload: String
    public var sendAttempts: [SendAttemptItem]
}

/// Admin body of `POST /sim/transactions`: transactions of one customer.
public struct SeedTransactionsRequest: Codable, Hashable, Sendable {
    /// The customer; defaults to one account per `originalTransactionId`.
    public var customerId: String?
    public var transactions: [JWSTransactionDecodedPayload]
    public init(customerId: String? = nil, transactions: [JWSTransactionDecodedPayload]) {
        self.customerId = customerId
        self.transactions = transactions
    }
}

/// Admin body of `POST /sim/notifications`: a notification to record as sent, built by the simulator
/// from its current data and signed now.
public struct SeedNotificationRequest: Codable, Hashable, Sendable {
    public var bundleId: String
    public var notificationType: NotificationType
    public var subtype: NotificationSubtype?
    /// The transaction the notification is about (its signed info and, for subscriptions, renewal info are nested).
    public var transactionId: String?
    /// When it was first sent (default: now).
    public var sentDate: Date?
    /// Apple's delivery results, e.g. `["SUCCESS"]` or `["TIMED_OUT", "SUCCESS"]` (default: one `SUCCESS`;
    /// `[]` when the sender records each attempt as it happens).
    public var sendAttemptResults: [String]?
    /// Why the customer asked for a refund (`CONSUMPTION_REQUEST` only).
    public var consumptionRequestReason: ConsumptionRequestReason?
    /// A mass extension's result (`RENEWAL_EXTENSION/SUMMARY` only): sent as `summary`, without `data`.
    public var summary: Summary?
    /// The External Purchase API token (`EXTERNAL_PURCHASE_TOKEN` only): sent as
    /// `externalPurchaseToken`, without `data`; its app is the request's `bundleId`.
    public var externalPurchaseToken: ExternalPurchaseToken?
    public init(
        bundleId: String, notificationType: NotificationType, subtype: NotificationSubtype? = nil, transactionId: String? = nil,
        sentDate: Date? = nil, sendAttemptResults: [String]? = nil, consumptionRequestReason: ConsumptionRequestReason? = nil,
        summary: Summary? = nil, externalPurchaseToken: ExternalPurchaseToken? = nil
    ) {
        self.consumptionRequestReason = consumptionRequestReason
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.bundleId = bundleId
        self.notificationType = notificationType
        self.subtype = subtype
        self.transactionId = transactionId
        self.sentDate = sentDate
        self.sendAttemptResults = sendAttemptResults
    }
}

/// Admin body of `POST /sim/orders`: an order ID (from the customer's receipt e-mail) and its transactions.
public struct SeedOrderRequest: Codable, Hashable, Sendable {
    public var orderId: String
    public var transactionIds: [String]
    public init(orderId: String, transactionIds: [String]) {
        self.orderId = orderId
        self.transactionIds = transactionIds
    }
}

/// A consumption report the simulator received (for tests and a lifecycle driver to inspect).
public struct ReceivedConsumption: Codable, Hashable, Sendable {
    public var bundleId: String
    public var transactionId: String
    public var request: ConsumptionRequest
    public var receivedAt: Date
}
