import AppStore
import Foundation
import GrantDecision
import JSONCoding
import PipelineRecords

/// The rows a batch collects (``BatchState``). The batch's own writes reach Postgres as typed
/// columns (``GrantWriteColumns``); the rows of the rarer statements of ``StoreStatements`` (mass
/// extension reports, consent rescinds, external purchase tokens, published outbox rows, products)
/// are bound the same way, one array per column (``RowsStatement``).
enum StoreRows {
    struct Transaction {
        var environment: String
        var transaction: JWSTransactionDecodedPayload
        var rawJWS: String?
    }

    struct Claim: Hashable {
        var environment: String
        var originalTransactionId: String
        var customerId: UUID
        var firstClaimedAt: Date
        var verified: Bool
        var status: String
        var causeEventKey: String
    }

    struct Notification {
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
        /// When verify accepted the record (`notifications.verified_at`).
        var verifiedAt: Date
        /// When the pipeline took it in: its `ingested-at` header (`notifications.ingested_at`).
        var ingestedAt: Date?
        var outcome: String
        var note: String?
        /// The trace ID of the record's trace context (migration 0022).
        var traceId: String?
    }

    struct ConsumptionRequest {
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
    struct MassExtensionReport {
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
    struct ConsentRescind: Hashable {
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

    /// A published outbox row (``StoreStatements/deletePublished``): its customer and sequence number.
    struct PublishedChange {
        var environment: String
        var customerId: UUID
        var seq: Int64
    }

    /// A product's entitlement (``StoreStatements/InsertProducts``); `durationDays` for a
    /// non-renewing subscription's term.
    struct ProductEntitlement {
        var productId: String
        var entitlementKey: String
        var durationDays: Int32?
    }
}
