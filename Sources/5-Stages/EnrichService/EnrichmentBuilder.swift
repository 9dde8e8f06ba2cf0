import AppStore
import Foundation
import PipelineRecords

/// The pure part of enrichment: what a record and a lookup's answer become. No I/O, so every rule
/// (sorting, the transaction in force, where the `appAccountToken` comes from) is tested directly.
public enum EnrichmentBuilder {
    /// How a record is enriched.
    public enum Plan: Hashable, Sendable {
        /// Nothing to look up (`TEST`, summaries, consent…).
        case none
        /// The record's own transaction is the truth (consumables never appear in history, and
        /// StoreKit Testing in Xcode has no App Store Server API).
        case transactionOnly
        /// Transaction history (and, for auto-renewables, the status) of the purchase.
        case history(PurchaseKey)
    }

    /// The plan for a record.
    public static func plan(for record: VerifiedRecord) -> Plan {
        guard let original = record.originalTransactionId, !original.isEmpty else { return .none }
        if record.transaction?.type == .consumable || record.environment == .xcode { return .transactionOnly }
        let isSubscription =
            record.transaction?.type == .autoRenewableSubscription
            || (record.transaction == nil && record.renewalInfo != nil)
        return .history(
            PurchaseKey(
                bundleId: record.bundleId, environment: record.environment, originalTransactionId: original,
                productType: record.transaction?.type, subscriptionGroupIdentifier: record.transaction?.subscriptionGroupIdentifier,
                isAutoRenewable: isSubscription))
    }

    /// Apple's history order is not reliable: ascending by `purchaseDate`, ties by `transactionId`
    /// (numerically when both are numbers), one entry per `transactionId` (the last seen wins, as
    /// Apple may return a transaction again after a modification).
    public static func sorted(_ transactions: [JWSTransactionDecodedPayload]) -> [JWSTransactionDecodedPayload] {
        var byID: [String: JWSTransactionDecodedPayload] = [:]
        var withoutID: [JWSTransactionDecodedPayload] = []
        for transaction in transactions {
            if let id = transaction.transactionId { byID[id] = transaction } else { withoutID.append(transaction) }
        }
        return (Array(byID.values) + withoutID).sorted { a, b in
            let (da, db) = (a.purchaseDate ?? .distantPast, b.purchaseDate ?? .distantPast)
            if da != db { return da < db }
            return idLess(a.transactionId ?? "", b.transactionId ?? "")
        }
    }

    static func idLess(_ a: String, _ b: String) -> Bool {
        if let x = UInt64(a), let y = UInt64(b) { return x < y }
        return a < b
    }

    /// The enrichment of a record planned `.history`, from the purchase's lookup.
    public static func historyEnrichment(record: VerifiedRecord, lookup: PurchaseLookupResult) -> Enrichment {
        var transactions = lookup.history
        // Apple can lag behind its own notification; the record's transaction is verified Apple data.
        if let own = record.transaction, let id = own.transactionId, !transactions.contains(where: { $0.transactionId == id }) {
            transactions.append(own)
        }
        let history = sorted(transactions)
        let token = resolveToken(record: record, history: history, renewalInfo: lookup.subscriptionStatus?.renewalInfo)
        return Enrichment(
            lookup: .history, history: history, inForceTransactionId: history.last?.transactionId,
            subscriptionStatus: lookup.subscriptionStatus, appAccountToken: token?.token, appAccountTokenSource: token?.source,
            fetchedAt: lookup.fetchedAt)
    }

    /// The enrichment of a consumable: its own transaction.
    public static func transactionOnlyEnrichment(record: VerifiedRecord, now: Date) -> Enrichment {
        let token = resolveToken(record: record, history: [])
        return Enrichment(
            lookup: .transactionOnly, inForceTransactionId: record.transactionId ?? record.transaction?.transactionId,
            appAccountToken: token?.token, appAccountTokenSource: token?.source, fetchedAt: now)
    }

    /// The enrichment of a record without a purchase.
    public static func noneEnrichment(record: VerifiedRecord, now: Date) -> Enrichment {
        let token = resolveToken(record: record, history: [])
        return Enrichment(lookup: .none, appAccountToken: token?.token, appAccountTokenSource: token?.source, fetchedAt: now)
    }

    /// The customer Apple names now. With a history, Apple's answer is the newest word: its newest
    /// transaction (by `purchaseDate`) that carries a token, else the status's renewal info. Without
    /// one, the record's own transaction, else its own renewal info. The app's upload hint only when
    /// Apple names nobody. Apple changes a purchase's token only deliberately (Set App Account Token,
    /// a crossgrade bought under another account), so the newest, not the earliest, is the owner's.
    public static func resolveToken(
        record: VerifiedRecord, history: [JWSTransactionDecodedPayload], renewalInfo: JWSRenewalInfoDecodedPayload? = nil
    ) -> (token: UUID, source: Enrichment.AppAccountTokenSource)? {
        if let newest = history.last(where: { $0.appAccountToken != nil }), let token = newest.appAccountToken {
            let own = newest.transactionId != nil && newest.transactionId == record.transaction?.transactionId
            return (token, own ? .transaction : .history)
        }
        if let token = renewalInfo?.appAccountToken { return (token, .renewalInfo) }
        if let token = record.transaction?.appAccountToken { return (token, .transaction) }
        if let token = record.renewalInfo?.appAccountToken { return (token, .renewalInfo) }
        if let token = record.hints?.appAccountToken { return (token, .appHint) }
        return nil
    }
}

/// Which purchase to look up: its app, environment and `originalTransactionId`, plus filters that
/// shorten the customer's history.
public struct PurchaseKey: Hashable, Sendable, CustomStringConvertible {
    public var bundleId: String
    public var environment: AppStoreEnvironment
    public var originalTransactionId: String
    public var productType: ProductType?
    public var subscriptionGroupIdentifier: String?
    public var isAutoRenewable: Bool

    /// What lookups are shared by: one purchase of one app in one environment.
    public var coalescingKey: String { "\(environment.rawValue)|\(bundleId)|\(originalTransactionId)" }
    public var description: String { coalescingKey }
}

/// What the API said about one purchase.
public struct PurchaseLookupResult: Hashable, Sendable {
    /// The purchase's transactions (filtered to its `originalTransactionId`), verified, in Apple's order.
    public var history: [JWSTransactionDecodedPayload]
    /// Its entry of Get All Subscription Statuses (auto-renewables only).
    public var subscriptionStatus: SubscriptionStatusSnapshot?
    /// When the answers arrived.
    public var fetchedAt: Date
    /// When the first request was sent (at the latest): an answer serves only records that arrived
    /// before it, so it can be relied on to know of them.
    public var requestedAt: Date
    /// - Parameter requestedAt: When the first request was sent; `fetchedAt` when not given.
    public init(
        history: [JWSTransactionDecodedPayload], subscriptionStatus: SubscriptionStatusSnapshot?, fetchedAt: Date, requestedAt: Date? = nil
    ) {
        self.history = history
        self.subscriptionStatus = subscriptionStatus
        self.fetchedAt = fetchedAt
        self.requestedAt = requestedAt ?? fetchedAt
    }
}
