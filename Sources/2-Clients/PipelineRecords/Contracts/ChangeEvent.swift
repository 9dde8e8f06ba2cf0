import AppStore
import Foundation

/// The body of an `entitlements.changes.v1` record: one entitlement change of one customer, with
/// its gap-free per-customer sequence number (also in the `seq` header) and its cause.
public struct ChangeEvent: Codable, Hashable, Sendable {
    public var schema = ChangeEvent.schemaName
    public var environment: String
    public var customerId: UUID
    public var seq: Int64
    public var change: String
    public var entitlementKey: String
    public var sourceId: String
    public var productId: String
    public var active: Bool
    public var activeUntil: Date?
    public var reason: String
    public var quantity: Int?
    public var cause: GrantCause

    /// The value of every change event's `schema` field and header.
    public static let schemaName = "entitlements.changes.v1"

    public init(
        environment: String, customerId: UUID, seq: Int64, change: String, entitlementKey: String, sourceId: String, productId: String,
        active: Bool, activeUntil: Date?, reason: String, quantity: Int?, cause: GrantCause
    ) {
        self.environment = environment
        self.customerId = customerId
        self.seq = seq
        self.change = change
        self.entitlementKey = entitlementKey
        self.sourceId = sourceId
        self.productId = productId
        self.active = active
        self.activeUntil = activeUntil
        self.reason = reason
        self.quantity = quantity
        self.cause = cause
    }
}

/// An `EXTERNAL_PURCHASE_TOKEN` as published on `entitlements.changes.v1` (change
/// `external_purchase_token`), for the service that reports external purchases to Apple. It names
/// no customer, so it has no `customerId` and no `seq`: it is keyed
/// `<environment>:external-purchase:<externalPurchaseId>`, and consumers drop repeats by
/// `cause.eventKey` (migration 0019).
public struct ExternalPurchaseTokenEvent: Codable, Hashable, Sendable {
    /// The `change` of every such event.
    public static let change = "external_purchase_token"

    public var schema = ChangeEvent.schemaName
    public var environment: String
    public var change = ExternalPurchaseTokenEvent.change
    /// Apple's token as signed: `externalPurchaseId`, its dates (milliseconds), type and app.
    public var externalPurchaseToken: ExternalPurchaseToken
    /// The notification (its `subtype`: `UNREPORTED`, `ACTIVE_TOKEN_REMINDER` or `CREATED`).
    public var cause: GrantCause

    public init(environment: String, externalPurchaseToken: ExternalPurchaseToken, cause: GrantCause) {
        self.environment = environment
        self.externalPurchaseToken = externalPurchaseToken
        self.cause = cause
    }

    /// The record key on the changes topic.
    public static func key(environment: String, externalPurchaseId: String) -> String {
        "\(environment):external-purchase:\(externalPurchaseId)"
    }
}

/// The headers of an `entitlements.changes.v1` record, beside ``PipelineHeader``'s `schema` and
/// `content-type` (schemas/headers.md).
public enum ChangeHeader {
    /// The change's gap-free per-customer sequence number, as in the body.
    public static let seq = "seq"
    /// The customer's UUID, lower case.
    public static let customerId = "customer-id"
}

/// The event that caused a change: which notification (or upload) and what it said.
public struct GrantCause: Hashable, Codable, Sendable {
    /// `notification:<uuid>` or `transaction:<transactionId>:<signedDate ms>`.
    public var eventKey: String
    public var notificationUUID: String?
    /// Apple's `notificationType` (raw), or `APP_UPLOAD` for an app upload.
    public var type: String
    public var subtype: String?
    public var transactionId: String?
    /// Where the truth came from: `history` (App Store Server API at `asOf`) or `transaction-only`.
    public var lookup: String
    /// The moment the facts describe.
    public var asOf: Date
    /// The event's `signedDate`.
    public var signedDate: Date?

    public init(
        eventKey: String, notificationUUID: String?, type: String, subtype: String?, transactionId: String?, lookup: String, asOf: Date,
        signedDate: Date?
    ) {
        self.eventKey = eventKey
        self.notificationUUID = notificationUUID
        self.type = type
        self.subtype = subtype
        self.transactionId = transactionId
        self.lookup = lookup
        self.asOf = asOf
        self.signedDate = signedDate
    }
}
