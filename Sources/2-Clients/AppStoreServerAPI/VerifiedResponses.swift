import AppStore
import Foundation

/// One page of transaction history, every transaction verified.
public struct TransactionHistoryPage: Hashable, Sendable {
    public var transactions: [JWSTransactionDecodedPayload]
    public var revision: String?
    public var hasMore: Bool
}

/// One subscription's entry of Get All Subscription Statuses, both JWS verified.
public struct VerifiedSubscriptionStatus: Hashable, Sendable {
    public var subscriptionGroupIdentifier: String?
    public var originalTransactionId: String?
    public var status: SubscriptionStatus?
    public var transaction: JWSTransactionDecodedPayload?
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
}

/// One page of refund history, every transaction verified (and kept as Apple signed it, so a
/// sweep can feed it to the pipeline).
public struct RefundHistoryPage: Hashable, Sendable {
    public var signedTransactions: [VerifiedSignedTransaction]
    /// Apple's token for the next page, or (on the last page) for asking later what is new.
    public var revision: String?
    public var hasMore: Bool

    public var transactions: [JWSTransactionDecodedPayload] { signedTransactions.map(\.transaction) }
}

/// Look Up Order ID's answer, verified.
public struct OrderLookup: Hashable, Sendable {
    /// Apple's status: true for a valid order ID (status 0).
    public var isValid: Bool
    public var transactions: [JWSTransactionDecodedPayload]
}

/// One notification of Get Notification History (or a test notification's status), verified.
public struct NotificationHistoryEntry: Hashable, Sendable {
    /// The notification and its nested JWS, verified.
    public var notification: VerifiedNotification
    /// The JWS as Apple returned it (for replay through the pipeline).
    public var signedPayload: String
    /// Apple's delivery attempts, oldest first.
    public var sendAttempts: [SendAttemptItem]
}

/// One page of notification history.
public struct NotificationHistoryPage: Hashable, Sendable {
    public var entries: [NotificationHistoryEntry]
    public var paginationToken: String?
    public var hasMore: Bool
}

/// A transaction verified, with the JWS it came in.
public struct VerifiedSignedTransaction: Hashable, Sendable {
    public var transaction: JWSTransactionDecodedPayload
    /// The JWS exactly as Apple returned it.
    public var signed: String
}
