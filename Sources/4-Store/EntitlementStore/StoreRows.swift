import AppStore
import Foundation
import GrantDecision
import JSONCoding
import PipelineRecords

/// The JSON shapes the store sends to Postgres as one `jsonb` parameter per statement and unpacks
/// with `batch_rows` (see ``StoreStatements``): a whole batch in a handful of statements, absent
/// members read as null. Dates travel as milliseconds since 1970 (Apple's unit), so they are
/// exact; UUIDs as upper-case text. Written by ``StreamingJSONEncoder``: Foundation's encoder was
/// most of grant's CPU.
enum StoreRows {
    static func json<T: Encodable>(_ value: T) throws -> String {
        try StreamingJSONEncoder.encodeToString(value)
    }

    struct Key: Encodable {
        var e: String
        var k: String
    }

    struct Customer: Encodable, Hashable {
        var environment: String
        var customerId: UUID
        var externalUserId: String?
    }

    struct Transaction: Encodable {
        var environment: String
        var transaction: JWSTransactionDecodedPayload
        var rawJWS: String?
    }

    struct Purchase: Encodable {
        var state: PurchaseState
        var owner: UUID?
    }

    struct Claim: Encodable, Hashable {
        var environment: String
        var originalTransactionId: String
        var customerId: UUID
        var firstClaimedAt: Date
        var verified: Bool
        var status: String
        var causeEventKey: String
    }

    struct Entitlement: Encodable {
        var environment: String
        var customerId: UUID
        var entitlementKey: String
        var sourceId: String
        var sourceKind: String
        var productId: String
        var active: Bool
        var activeFrom: Date?
        var activeUntil: Date?
        var reason: String

        init(_ g: EntitlementGrant) {
            environment = g.id.customer.environment
            customerId = g.id.customer.customerId
            entitlementKey = g.id.entitlementKey
            sourceId = g.id.sourceId
            sourceKind = g.source.rawValue
            productId = g.productId
            active = g.active
            activeFrom = g.activeFrom
            activeUntil = g.activeUntil
            reason = g.reason
        }
    }

    struct EntitlementID: Encodable {
        var environment: String
        var customerId: UUID
        var entitlementKey: String
        var sourceId: String
    }

    struct Consumable: Encodable {
        var environment: String
        var transactionId: String
        var customerId: UUID?
        var productId: String
        var entitlementKeys: [String]
        var quantity: Int
        var purchasedAt: Date?
        var revokedAt: Date?
        var revocationReason: Int?
        var asOf: Date
        var eventKey: String
    }

    struct Notification: Encodable {
        var environment: String
        var eventKey: String
        var notificationUUID: String?
        var kind: String
        var source: String
        var type: String
        var subtype: String?
        var originalTransactionId: String?
        var transactionId: String?
        var signedDate: Date?
        var receivedAt: Date
        var ingestedAt: Date?
        var outcome: String
        var note: String?
        /// The trace ID of the record's trace context (migration 0022).
        var traceId: String?
    }

    struct ConsumptionRequest: Encodable {
        var environment: String
        var notificationUUID: String
        var bundleId: String
        var transactionId: String?
        var originalTransactionId: String?
        var reason: String?
        var signedDate: Date?
        var deadline: Date
    }

    /// A mass extension's `RENEWAL_EXTENSION/SUMMARY` or `/FAILURE` (``StoreStatements/recordMassExtensions``).
    struct MassExtensionReport: Encodable {
        var environment: String
        var notificationUUID: String
        /// `summary` or `failure`.
        var report: String
        var bundleId: String
        var productId: String?
        var requestIdentifier: String?
        var succeededCount: Int64?
        var failedCount: Int64?
        var originalTransactionId: String?
        var reportedAt: Date
    }

    /// A `RESCIND_CONSENT` (``StoreStatements/recordConsentRescinds``, migration 0018): a new one, or
    /// one waiting for its customer that this batch found (`customerId` set).
    struct ConsentRescind: Encodable, Hashable {
        var environment: String
        var appTransactionId: String
        var eventKey: String
        var notificationUUID: String?
        var subtype: String?
        var lookup: String
        var asOf: Date
        var signedDate: Date?
        var customerId: UUID?

        var key: BatchState.AppTransactionKey { .init(environment: environment, appTransactionId: appTransactionId) }

        /// The `RESCIND_CONSENT` as the cause of its change.
        var cause: GrantCause {
            GrantCause(
                eventKey: eventKey, notificationUUID: notificationUUID, type: NotificationType.rescindConsent.rawValue, subtype: subtype,
                transactionId: nil, lookup: lookup, asOf: asOf, signedDate: signedDate)
        }
    }

    /// One customer's changes in a batch, in batch order: `grant_write` numbers them from the
    /// customer's counter and sets each body's `seq`.
    struct CustomerChanges: Encodable {
        var environment: String
        var customerId: UUID
        /// The outbox bodies (the change events as published); the history rows' columns are read from them.
        var changes: [ChangeEvent]
        /// Each change's trace context (`traceparent` of the record that caused it), "" for none.
        var traces: [String]
    }

    /// `grant_load`'s argument: the batch's purchases (locked) and events; only the purchases and
    /// transactions of events not applied yet are read.
    struct Load: Encodable {
        var purchases: [Key]
        var events: [Event]

        struct Event: Encodable {
            var e: String
            var k: String
            /// The event's purchase (its original transaction ID, or a consumable's transaction ID).
            var p: String?
            /// The IDs of the transactions it carries (stored already, and as of when?).
            var t: [String]
            /// The app transaction its purchase carries, or a `RESCIND_CONSENT` names: locked beside the
            /// purchases, and the rescinds waiting for it are read too.
            var a: String?
        }
    }

    /// `grant_write`'s argument: the rows a batch changes, table by table; a member with no rows is
    /// left out, and its statement skipped.
    struct Write: Encodable {
        var customers: [Customer]?
        var transactions: [Transaction]?
        var purchases: [Purchase]?
        var claims: [Claim]?
        var deletions: [EntitlementID]?
        var entitlements: [Entitlement]?
        var consumables: [Consumable]?
        var notifications: [Notification]?
        var consumptionRequests: [ConsumptionRequest]?
        var changes: [CustomerChanges]?

        var isEmpty: Bool {
            customers == nil && transactions == nil && purchases == nil && claims == nil && deletions == nil && entitlements == nil
                && consumables == nil && notifications == nil && consumptionRequests == nil && changes == nil
        }
    }

    struct SeqAllocation: Encodable {
        var environment: String
        var customerId: UUID
        var nextSeq: Int64
    }
}
