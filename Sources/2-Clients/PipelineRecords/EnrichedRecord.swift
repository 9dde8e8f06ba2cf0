import AppStore
import Foundation
import JSONCoding

/// The body of an enriched-topic record (`appstore.notifications.enriched.v1`, schema
/// `schemas/enriched.v1.schema.json`): a verified record plus the truth the App Store Server API
/// gave for its purchase when enrich looked it up.
///
/// Grant decides from this alone. The event (``verified``) says what happened; the ``enrichment``
/// says where the purchase stands when Apple answered (``Enrichment/newestSignedDate``) — which is
/// what makes late, duplicated and reordered notifications converge to the same entitlements.
public struct EnrichedRecord: Codable, Hashable, Sendable {
    /// The verified record, unchanged.
    public var verified: VerifiedRecord
    /// What enrich added.
    public var enrichment: Enrichment

    public init(verified: VerifiedRecord, enrichment: Enrichment) {
        self.verified = verified
        self.enrichment = enrichment
    }

    /// The partition key: the verified record's (`<environment>:<originalTransactionId>`, …).
    public var key: String? { verified.key }

    /// The JSON body as published, by ``StreamingJSONEncoder`` (dates in milliseconds, members in
    /// declaration order): one pass, where Foundation's encoder built and sorted a tree per record.
    public func encoded() throws -> [UInt8] {
        try StreamingJSONEncoder.encode(self)
    }

    /// The same document as `EnrichedRecord(verified: <verifiedBody decoded>, enrichment:).encoded()`
    /// when `verifiedBody` is the verified record as verify published it, but with those bytes
    /// copied rather than decoded and written again (that was two thirds of enrich's encoding). The
    /// caller has decoded `verifiedBody` (so it is one JSON value) and changed nothing in it.
    public static func encoded(verifiedBody: some Collection<UInt8>, enrichment: Enrichment) throws -> [UInt8] {
        let written = try StreamingJSONEncoder.encode(enrichment)
        var body: [UInt8] = []
        body.reserveCapacity(verifiedBody.count + written.count + 32)
        body.append(contentsOf: #"{"verified":"#.utf8)
        body.append(contentsOf: verifiedBody)
        body.append(contentsOf: #","enrichment":"#.utf8)
        body.append(contentsOf: written)
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// Decodes a published body with the project's decoder (strict RFC 8259, direct readers for
    /// Apple's models inside), which costs a fraction of Foundation's on every record a stage reads.
    public static func decode(_ bytes: some Collection<UInt8>) throws -> EnrichedRecord {
        try AppStoreJSON.decode(EnrichedRecord.self, from: Array(bytes))
    }
}

/// The App Store Server API's view of one purchase, verified JWS by JWS, as enrich fetched it.
public struct Enrichment: Codable, Hashable, Sendable {
    /// How the truth was obtained.
    public enum Lookup: String, Codable, Hashable, Sendable {
        /// Transaction history and subscription statuses were fetched from the API.
        case history
        /// The record's own transaction is the truth (consumables never appear in history).
        case transactionOnly = "transaction-only"
        /// The record names no purchase (`TEST`, summaries, consent); nothing to look up.
        case none
    }

    /// Where ``Enrichment/appAccountToken`` came from.
    public enum AppAccountTokenSource: String, Codable, Hashable, Sendable {
        /// The record's own verified transaction carried it.
        case transaction
        /// The newest transaction in Apple's history that has one (not the record's own).
        case history
        /// Apple's signed renewal info (the subscription status's, or the notification's own).
        case renewalInfo = "renewal-info"
        /// Only the app's unverified upload hint named it.
        case appHint = "app-hint"
    }

    /// How the truth was obtained.
    public var lookup: Lookup
    /// Every transaction of the purchase's `originalTransactionId`, each JWS verified, sorted by
    /// `purchaseDate` ascending (ties by `transactionId`), since Apple's order is not reliable.
    /// Empty when ``lookup`` is not ``Lookup/history``.
    public var history: [JWSTransactionDecodedPayload]
    /// The `transactionId` of the transaction in force: the newest by `purchaseDate` in
    /// ``history``, or the record's own transaction for ``Lookup/transactionOnly``.
    public var inForceTransactionId: String?
    /// The auto-renewable subscription's status from Get All Subscription Statuses, for this
    /// `originalTransactionId`; absent for other product types.
    public var subscriptionStatus: SubscriptionStatusSnapshot?
    /// The customer's `appAccountToken`, resolved; absent when nothing names one.
    public var appAccountToken: UUID?
    /// Where ``appAccountToken`` came from.
    public var appAccountTokenSource: AppAccountTokenSource?
    /// When the API answered by enrich's clock; for ``Lookup/none`` and ``Lookup/transactionOnly``,
    /// when enrich processed the record. Kept for operators and enrich's own caches; grant orders
    /// facts by Apple's clock (``newestSignedDate``), never by this.
    public var fetchedAt: Date

    public init(
        lookup: Lookup, history: [JWSTransactionDecodedPayload] = [], inForceTransactionId: String? = nil,
        subscriptionStatus: SubscriptionStatusSnapshot? = nil, appAccountToken: UUID? = nil,
        appAccountTokenSource: AppAccountTokenSource? = nil, fetchedAt: Date
    ) {
        self.lookup = lookup
        self.history = history
        self.inForceTransactionId = inForceTransactionId
        self.subscriptionStatus = subscriptionStatus
        self.appAccountToken = appAccountToken
        self.appAccountTokenSource = appAccountTokenSource
        self.fetchedAt = fetchedAt
    }

    /// The newest `signedDate` of the JWS Apple answered with (history, the status's transaction and
    /// renewal info): when Apple made the answer, by Apple's clock. Apple signs its answers anew on
    /// each request, so this orders two lookups of one purchase without trusting the clock of the
    /// host that made them (``fetchedAt``).
    public var newestSignedDate: Date? {
        var newest = history.lazy.compactMap(\.signedDate).max()
        for date in [subscriptionStatus?.transaction?.signedDate, subscriptionStatus?.renewalInfo?.signedDate] {
            if let date, newest.map({ date > $0 }) ?? true { newest = date }
        }
        return newest
    }

    /// The transaction in force, looked up in ``history``.
    public var inForceTransaction: JWSTransactionDecodedPayload? {
        guard let inForceTransactionId else { return nil }
        return history.last { $0.transactionId == inForceTransactionId }
    }
}

/// One subscription's entry in Apple's `StatusResponse` (`lastTransactions` of its group), with
/// both JWS verified and decoded.
public struct SubscriptionStatusSnapshot: Codable, Hashable, Sendable {
    /// The subscription group the status belongs to.
    public var subscriptionGroupIdentifier: String?
    /// Apple's status: active, expired, billing retry, grace period, revoked.
    public var status: SubscriptionStatus
    /// The verified `signedTransactionInfo`: the latest transaction of the subscription.
    public var transaction: JWSTransactionDecodedPayload?
    /// The verified `signedRenewalInfo`.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?

    public init(
        subscriptionGroupIdentifier: String? = nil, status: SubscriptionStatus,
        transaction: JWSTransactionDecodedPayload? = nil, renewalInfo: JWSRenewalInfoDecodedPayload? = nil
    ) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.status = status
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }
}
