import AppStore
import Foundation
import PipelineRecords

/// An enriched record reduced to what a decision needs: its key, its kind, the moment its facts
/// describe, the transaction in force, the renewal info and status, and the customer it names.
public struct GrantEvent: Hashable, Sendable {
    /// The dedupe key: `notification:<notificationUUID>` for a notification,
    /// `transaction:<transactionId>:<signedDate ms>` for an app upload.
    public var eventKey: String
    public var environment: String
    public var kind: VerifiedRecord.Kind
    public var source: String
    /// The purchase the event is about, if it names one.
    public var purchaseKey: PurchaseKey?
    public var notificationType: NotificationType?
    public var subtype: NotificationSubtype?
    public var notificationUUID: String?
    /// The event's `signedDate` (the notification's, or the uploaded transaction's).
    public var signedDate: Date?
    /// The transaction in force: the enrichment's newest by `purchaseDate`, else the status
    /// snapshot's, else the event's own.
    public var transaction: JWSTransactionDecodedPayload?
    /// The renewal info: the status snapshot's, else the event's own.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    /// Apple's status: the snapshot's, else the notification's `data.status`.
    public var appleStatus: SubscriptionStatus?
    /// Every transaction the event carries (its own, the history, the snapshot's), to record.
    public var transactions: [JWSTransactionDecodedPayload]
    /// The customer the event names and whether Apple's signed data named it.
    public var claim: (customerId: UUID, verified: Bool)?
    /// The app's own user ID, when the upload's credential vouches for it (jwt, hmac; never an
    /// open upload's body). Recorded only for ``uploadCustomer``, only when that customer owns the
    /// purchase, and never in place of one already recorded.
    public var externalUserId: String?
    /// The customer ingest derived from the upload's credential (its stored `appAccountToken`),
    /// when the credential vouches for a user: the one customer ``externalUserId`` may be written for.
    public var uploadCustomer: UUID?
    /// Why the upload's hints were ignored, recorded with the event, or nil when they counted (or
    /// there were none).
    public var uploadHintsRefusal: String?
    /// What a `CONSUMPTION_REQUEST` asks about, for the consumption responder.
    public var consumptionRequest: ConsumptionRequestFacts?
    /// What a mass extension's `RENEWAL_EXTENSION` (`SUMMARY` or `FAILURE`) reports, to record
    /// against the request.
    public var massExtension: MassExtensionFacts?
    public var version: EventVersion
    public var lookup: Enrichment.Lookup
    /// When verify accepted the record.
    public var verifiedAt: Date
    /// When the pipeline took the record in (ingest, or the job that made the record): the
    /// `ingested-at` header, set by the grant stage; the start of the webhook-to-entitlement latency.
    public var ingestedAt: Date?
    /// The W3C `traceparent` of grant's span for the record that carried the event (set by the grant
    /// stage), kept with each change in the outbox so the published change event continues the trace.
    public var traceContext: String?

    /// The trace ID ``traceContext`` names (its second field), or nil.
    public var traceID: String? {
        guard let traceContext else { return nil }
        let fields = traceContext.split(separator: "-")
        return fields.count == 4 && fields[1].utf8.count == 32 ? String(fields[1]) : nil
    }
    /// The raw JWS of the event's own transaction, when the record kept it (app uploads).
    public var signedTransaction: String?
    /// The app transaction a notification carries instead of a purchase (`RESCIND_CONSENT`'s `appData`).
    public var appTransactionId: String?
    /// Who ``appTransactionId`` belongs to: the owner of a purchase whose Apple-signed transactions
    /// carry it, found by the store before deciding (nil: none known yet).
    public var appTransactionCustomer: UUID?
    /// The token an `EXTERNAL_PURCHASE_TOKEN` is about (with its `externalPurchaseId`), to publish for
    /// the service that reports external purchases to Apple; nil for every other event.
    public var externalPurchaseToken: ExternalPurchaseToken?

    public static func == (a: GrantEvent, b: GrantEvent) -> Bool {
        a.eventKey == b.eventKey && a.version == b.version
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(eventKey)
        hasher.combine(version)
    }

    /// The type as recorded: Apple's raw `notificationType`, or `APP_UPLOAD`.
    public var typeName: String { notificationType?.rawValue ?? "APP_UPLOAD" }

    public var cause: GrantCause {
        GrantCause(
            eventKey: eventKey, notificationUUID: notificationUUID, type: typeName, subtype: subtype?.rawValue,
            transactionId: transaction?.transactionId, lookup: lookup.rawValue, asOf: version.asOf, signedDate: signedDate)
    }

    /// Normalises a record, or says why it can never be applied.
    public init(_ record: EnrichedRecord) throws(GrantRejection) {
        let verified = record.verified
        let enrichment = record.enrichment
        guard verified.environment.isKnown else { throw GrantRejection.missingEnvironment() }
        environment = verified.environment.rawValue
        kind = verified.kind
        source = verified.source
        notificationType = verified.notification?.notificationType
        subtype = verified.notification?.subtype
        notificationUUID = verified.notificationUUID ?? verified.notification?.notificationUUID
        verifiedAt = verified.verifiedAt
        signedTransaction = verified.signedTransaction
        lookup = enrichment.lookup
        appTransactionId = verified.appTransaction?.appTransactionId
        if notificationType == .externalPurchaseToken, let token = verified.notification?.externalPurchaseToken,
            !(token.externalPurchaseId ?? "").isEmpty
        {
            externalPurchaseToken = token
        }

        let snapshot = enrichment.subscriptionStatus
        transaction = enrichment.inForceTransaction ?? enrichment.history.last ?? snapshot?.transaction ?? verified.transaction
        renewalInfo = snapshot?.renewalInfo ?? verified.renewalInfo
        appleStatus = snapshot?.status ?? verified.notification?.data?.status
        var all = enrichment.history
        if let t = snapshot?.transaction { all.append(t) }
        if let t = verified.transaction { all.append(t) }
        transactions = all.filter { $0.transactionId != nil }

        // The key is the record's own (PipelineRecords), the one enrich drops replays by.
        switch verified.kind {
        case .notification:
            guard let key = verified.eventKey else {
                throw GrantRejection(
                    code: .missingNotificationUUID, message: "the notification has no notificationUUID, so it cannot be deduplicated")
            }
            eventKey = key
            signedDate = verified.notification?.signedDate ?? verified.transaction?.signedDate
        case .transaction:
            guard let key = verified.eventKey else {
                throw GrantRejection.missingPurchase("the uploaded transaction has no transactionId")
            }
            eventKey = key
            signedDate = verified.transaction?.signedDate
        }

        // Sandbox data must never grant Production access: every transaction must say the same.
        for t in [transaction, verified.transaction] + transactions.map(Optional.some) {
            if let env = t?.environment, env != verified.environment {
                throw GrantRejection.environmentMismatch(verified.environment.rawValue, env.rawValue)
            }
        }
        // A consumable is its own purchase; everything else is keyed by its original transaction.
        let env = environment
        if transaction?.type == .consumable {
            purchaseKey = (transaction?.transactionId).map { PurchaseKey(environment: env, purchaseId: $0) }
        } else if let otid = transaction?.originalTransactionId ?? verified.originalTransactionId, !otid.isEmpty {
            purchaseKey = PurchaseKey(environment: environment, purchaseId: otid)
        } else {
            purchaseKey = nil
        }

        // Apple's signed token first; the app's hint only as far as the upload was authenticated.
        let hintsCount = verified.hints.map { Self.uploadHintsCount($0, environment: verified.environment) } ?? false
        let hintedToken = verified.hints?.appAccountToken ?? (enrichment.appAccountTokenSource == .appHint ? enrichment.appAccountToken : nil)
        if let token = enrichment.appAccountToken, enrichment.appAccountTokenSource != .appHint {
            claim = (token, true)
        } else if let token = verified.transaction?.appAccountToken ?? transaction?.appAccountToken {
            claim = (token, true)
        } else if let token = hintedToken, hintsCount {
            claim = (token, false)
        } else {
            claim = nil
        }
        if let hints = verified.hints, hints.isAuthenticated, let user = hints.userId {
            externalUserId = user
            uploadCustomer = hints.appAccountToken
        } else {
            externalUserId = nil
            uploadCustomer = nil
        }
        if let hints = verified.hints, !hintsCount, hints.userId != nil || hints.appAccountToken != nil {
            uploadHintsRefusal =
                "upload hints not counted: the upload was \(hints.authentication.map { "authenticated as \($0.rawValue)" } ?? "not authenticated"), which vouches for no user in \(verified.environment.rawValue)"
        } else if let hinted = verified.hints?.appAccountToken, let claim, claim.verified, hinted != claim.customerId {
            uploadHintsRefusal =
                "upload's customer \(hinted.uuidString.lowercased()) not counted: Apple's signed token names \(claim.customerId.uuidString.lowercased())"
        } else {
            uploadHintsRefusal = nil
        }
        if notificationType == .consumptionRequest {
            // The notification's own transaction is the one the customer wants refunded, not the newest.
            consumptionRequest = ConsumptionRequestFacts(
                bundleId: verified.bundleId, transactionId: verified.transaction?.transactionId ?? transaction?.transactionId,
                originalTransactionId: verified.transaction?.originalTransactionId ?? purchaseKey?.purchaseId,
                reason: verified.notification?.data?.consumptionRequestReason?.rawValue)
        } else {
            consumptionRequest = nil
        }
        massExtension = MassExtensionFacts(verified, transaction: verified.transaction ?? transaction)

        // History is the truth as of when Apple answered; a transaction alone, as of its signing.
        // Both by Apple's clock: a host's (enrich's `fetchedAt`) may be skewed or stepped back, which
        // would make a newer fact (a refund) look older than the state it must replace.
        let asOf: Date
        switch enrichment.lookup {
        case .history:
            let signed = [enrichment.newestSignedDate, signedDate, transaction?.signedDate, renewalInfo?.signedDate].compactMap { $0 }
            asOf = signed.max() ?? enrichment.fetchedAt
        case .transactionOnly, .none: asOf = transaction?.signedDate ?? signedDate ?? enrichment.fetchedAt
        }
        version = EventVersion(asOf: asOf, eventKey: eventKey)
    }

    /// The transaction and app a customer's refund request (`CONSUMPTION_REQUEST`) is about.
    public struct ConsumptionRequestFacts: Hashable, Sendable {
        public var bundleId: String
        public var transactionId: String?
        public var originalTransactionId: String?
        /// Apple's `consumptionRequestReason`, raw.
        public var reason: String?
    }

    /// A mass extension's outcome as Apple reports it: `SUMMARY` names its request and counts;
    /// `FAILURE` names no request, only the subscription (its transaction) Apple could not extend.
    public struct MassExtensionFacts: Hashable, Sendable {
        public enum Report: String, Hashable, Sendable {
            case summary, failure
        }
        public var report: Report
        public var bundleId: String
        public var productId: String?
        /// `SUMMARY` only.
        public var requestIdentifier: String?
        public var succeededCount: Int64?
        public var failedCount: Int64?
        /// `FAILURE` only: the subscription not extended.
        public var originalTransactionId: String?

        init?(_ verified: VerifiedRecord, transaction: JWSTransactionDecodedPayload?) {
            guard verified.kind == .notification, verified.notification?.notificationType == .renewalExtension else { return nil }
            switch verified.notification?.subtype {
            case .summary?:
                guard let summary = verified.notification?.summary else { return nil }
                report = .summary
                bundleId = summary.bundleId ?? verified.bundleId
                productId = summary.productId
                requestIdentifier = summary.requestIdentifier
                succeededCount = summary.succeededCount
                failedCount = summary.failedCount
            case .failure?:
                guard let original = transaction?.originalTransactionId else { return nil }
                report = .failure
                bundleId = verified.bundleId
                productId = transaction?.productId
                originalTransactionId = original
            default:
                return nil
            }
        }
    }

    /// Whether an upload's hints may name the buyer: when ingest authenticated the user (a JWT from
    /// the app's identity provider, or its backend's HMAC), or, with uploads deliberately open
    /// (`none`), for test environments only. An unauthenticated hint never decides a Production
    /// purchase, so an old transaction JWS uploaded by anyone cannot take it from its owner.
    public static func uploadHintsCount(_ hints: AppUploadHints, environment: AppStoreEnvironment) -> Bool {
        if hints.isAuthenticated { return true }
        switch environment {
        case .sandbox, .xcode, .localTesting: return true
        case .production, .unknown: return false
        }
    }

    /// Why this event changes nothing whatever the state, or nil when it must be decided.
    var recordOnlyReason: String? {
        guard kind == .notification else { return nil }
        guard let type = notificationType else { return "the notification has no notificationType" }
        if !type.isKnown { return "notification type \(type.rawValue) is not known to this version; recorded without change" }
        if let subtype, !subtype.isKnown {
            return "subtype \(subtype.rawValue) of \(type.rawValue) is not known to this version; recorded without change"
        }
        switch type {
        case .test: return "TEST notification"
        case .refundDeclined: return "refund declined: nothing changes"
        case .consumptionRequest: return "consumption request recorded; answering it is the consumption responder's job"
        case .renewalExtension where subtype == .summary: return "mass renewal-extension summary"
        case .externalPurchaseToken:
            guard let id = externalPurchaseToken?.externalPurchaseId else { return "external purchase token event without an externalPurchaseId" }
            return "external purchase token \(id); published for the external purchase reports"
        case .rescindConsent:
            let whose =
                switch (appTransactionId, appTransactionCustomer) {
                case (let id?, let customer?): "; app transaction \(id) is customer \(customer.uuidString.lowercased())'s"
                case (let id?, nil): "; no customer known for app transaction \(id)"
                default: "; it names no app transaction"
                }
            return "consent rescinded for the app; no purchase changes" + whose
        default: return nil
        }
    }
}

extension GrantEvent {
    /// A `RESCIND_CONSENT` whose app transaction has a known customer, as the change that tells the
    /// services downstream (access itself is untouched: `active` true); none for any other event.
    var consentChanges: [EntitlementChange] {
        guard notificationType == .rescindConsent, let appTransactionId, let customer = appTransactionCustomer else { return [] }
        return [
            .consentRescinded(customer: CustomerKey(environment: environment, customerId: customer), appTransactionId: appTransactionId, cause: cause)
        ]
    }

    /// The user to record as `customer`'s external user ID: the upload's authenticated user, when
    /// `customer` is the one their credential maps to. A purchase bought with someone else's token
    /// and uploaded by its buyer links the buyer to nobody else's customer.
    public func linkedUser(for customer: UUID) -> String? {
        customer == uploadCustomer ? externalUserId : nil
    }
}
