import AppStore
import Foundation

/// A change to Apple's records for one customer, applied to the simulated Apple in time order.
public enum AppleMutation: Hashable, Sendable {
    /// A transaction is created or changed (refund, revocation, upgrade marks).
    case transaction(JWSTransactionDecodedPayload)
    /// An auto-renewable subscription's status and renewal info change.
    case subscription(originalTransactionId: String, status: SubscriptionStatus, renewalInfo: JWSRenewalInfoDecodedPayload)
}

/// A notification Apple sends about a step: built and signed by the simulated Apple from its records
/// at that moment, about ``transactionId``.
public struct NotificationSpec: Hashable, Sendable {
    public var type: NotificationType
    public var subtype: NotificationSubtype?
    public var transactionId: String
    public var consumptionRequestReason: ConsumptionRequestReason?

    public init(
        _ type: NotificationType, _ subtype: NotificationSubtype? = nil, transactionId: String,
        consumptionRequestReason: ConsumptionRequestReason? = nil
    ) {
        self.type = type
        self.subtype = subtype
        self.transactionId = transactionId
        self.consumptionRequestReason = consumptionRequestReason
    }
}

/// The app uploading a fresh purchase with who it believes the buyer is (`POST /v1/transactions`).
public struct UploadSpec: Hashable, Sendable {
    public var transactionId: String
    public var appAccountToken: UUID

    public init(transactionId: String, appAccountToken: UUID) {
        self.transactionId = transactionId
        self.appAccountToken = appAccountToken
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
