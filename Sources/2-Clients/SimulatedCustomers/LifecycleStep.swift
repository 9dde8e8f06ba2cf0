import AppStore
import Foundation

/// A change to Apple's records for one customer, applied to the simulated Apple in time order.
public enum AppleMutation: Hashable, Sendable {
    /// A transaction is created or changed (refund, revocation, upgrade marks).
    case transaction(JWSTransactionDecodedPayload)
    /// An auto-renewable subscription's status and renewal info change.
    case subscription(originalTransactionId: String, status: SubscriptionStatus, renewalInfo: JWSRenewalInfoDecodedPayload)
    /// A purchase Apple has just signed is not in its history yet: the next `lookups` history
    /// lookups of the transaction answer 404 `4040010` (Apple's "not found" for a transaction it has
    /// not indexed).
    case historyNotVisible(transactionId: String, lookups: Int)
}

/// A notification Apple sends about a step: built and signed by the simulated Apple from its records
/// at that moment, about ``transactionId``.
public struct NotificationSpec: Hashable, Sendable {
    public var type: NotificationType
    public var subtype: NotificationSubtype?
    public var transactionId: String
    public var consumptionRequestReason: ConsumptionRequestReason?
    /// Apple signs and records the notification but it never reaches the webhook (every attempt
    /// fails): only an operator job that asks Apple (the refund sweep) can bring its news.
    public var neverDelivered: Bool

    public init(
        _ type: NotificationType, _ subtype: NotificationSubtype? = nil, transactionId: String,
        consumptionRequestReason: ConsumptionRequestReason? = nil, neverDelivered: Bool = false
    ) {
        self.type = type
        self.subtype = subtype
        self.transactionId = transactionId
        self.consumptionRequestReason = consumptionRequestReason
        self.neverDelivered = neverDelivered
    }
}

/// The app telling the backend about a purchase, for its signed-in customer: the transaction as
/// StoreKit 2 signs it (`POST /v1/transactions`), or an old app version's StoreKit 1 app receipt
/// listing the purchase (`POST /v1/receipts`).
public struct UploadSpec: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable {
        case signedTransaction
        case appReceipt
    }

    public var transactionId: String
    public var appAccountToken: UUID
    public var kind: Kind

    public init(transactionId: String, appAccountToken: UUID, kind: Kind = .signedTransaction) {
        self.transactionId = transactionId
        self.appAccountToken = appAccountToken
        self.kind = kind
    }
}

/// One moment of a customer's lifecycle: what changes at Apple, and what reaches the backend.
public struct LifecycleStep: Hashable, Sendable {
    public var time: Date
    public var mutations: [AppleMutation]
    public var notification: NotificationSpec?
    public var upload: UploadSpec?

    public init(time: Date, mutations: [AppleMutation], notification: NotificationSpec? = nil, upload: UploadSpec? = nil) {
        self.time = time
        self.mutations = mutations
        self.notification = notification
        self.upload = upload
    }
}
