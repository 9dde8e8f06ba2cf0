import AppStore
import AppStoreServerAPI
import AppStoreSigning
import Foundation
import HTTPTypes

/// Turns stored data into what Apple returns: signed transactions, derived statuses and renewal info.
struct SimulatorSigning: Sendable {
    let signer: JWSSigner
    let store: SimulatorStore

    /// A transaction signed as of now, as Apple signs every answer. For the answers whose JWS comes
    /// back into the pipeline as an event of its own — Get Transaction Info (reconcile), Look Up
    /// Order ID, an app's upload — whose key is the transaction's `signedDate`: each must be new, as
    /// with Apple, or a reconcile of an unchanged transaction would be dropped as a replay.
    func signAsOfNow(_ transaction: JWSTransactionDecodedPayload) throws(SimulatorError) -> String {
        try sign(transaction, signedAt: store.now())
    }

    /// A transaction signed as of `signedAt` (a lifecycle step's time: an app uploads what StoreKit
    /// gave it then, not a copy signed later that would look newer than the step's notification).
    func sign(_ transaction: JWSTransactionDecodedPayload, signedAt: Date) throws(SimulatorError) -> String {
        var payload = transaction
        payload.signedDate = AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: signedAt))
        return try sign(payload: payload)
    }

    /// A transaction signed once per version, then served from ``SimulatorStore/signedTransactions``
    /// (`signedDate` is when this version was first signed): for the answers enrich fetches on every
    /// lookup — history pages, statuses, refund history — and notifications. Apple re-signs on every
    /// answer, which made signing the simulator's main cost.
    func sign(_ transaction: JWSTransactionDecodedPayload) throws(SimulatorError) -> String {
        var content = transaction
        content.signedDate = nil
        return try cached(store.signedTransactions, key: transaction.transactionId, content: content) { payload, now in
            payload.signedDate = now
        }
    }

    /// A subscription's renewal info signed, once per content (see ``sign(_:)``).
    func signedRenewalInfo(of latest: JWSTransactionDecodedPayload) throws(SimulatorError) -> String {
        let info = renewalInfo(of: latest)
        return try cached(store.signedRenewalInfos, key: info.originalTransactionId, content: info) { payload, now in
            payload.signedDate = now
        }
    }

    /// A subscription's renewal info signed as of now, never from the cache: each status answer
    /// carries one, so the newest `signedDate` of every lookup enrich makes is when the simulator
    /// answered, as with Apple, who signs every answer anew. Grant orders lookups of one purchase by
    /// that date; a cached, older one would let a stale answer tie with (or beat) a newer one.
    func signedRenewalInfoAsOfNow(of latest: JWSTransactionDecodedPayload) throws(SimulatorError) -> String {
        var info = renewalInfo(of: latest)
        info.signedDate = store.now()
        return try sign(payload: info)
    }

    /// The JWS held for `key` and `content`, or `content` dated now by `date`, signed and kept.
    private func cached<Content: Hashable & Sendable & Encodable>(
        _ cache: SignedJWSCache<Content>, key: String?, content: Content, date: (inout Content, Date) -> Void
    ) throws(SimulatorError) -> String {
        if let key, let jws = cache.jws(for: key, content: content) { return jws }
        var payload = content
        date(&payload, store.now())
        let jws = try sign(payload: payload)
        guard let key else { return jws }
        return cache.store(jws, for: key, content: content)
    }

    func sign(payload: some Encodable) throws(SimulatorError) -> String {
        do {
            return try signer.sign(payload)
        } catch {
            throw SimulatorError(.internalServerError, 5_000_000, "signing failed")
        }
    }

    /// The latest transaction (by purchase date) of each auto-renewable subscription of a customer.
    func latestSubscriptionTransactions(customerID: String, bundleId: String) -> [JWSTransactionDecodedPayload] {
        var latest: [String: JWSTransactionDecodedPayload] = [:]
        for stored in store.transactions(customerID: customerID, bundleId: bundleId)
        where stored.payload.type == .autoRenewableSubscription {
            let t = stored.payload
            guard let original = t.originalTransactionId else { continue }
            if let current = latest[original],
                (current.purchaseDate ?? .distantPast, current.transactionId ?? "") >= (t.purchaseDate ?? .distantPast, t.transactionId ?? "")
            {
                continue
            }
            latest[original] = t
        }
        return latest.values.sorted { ($0.originalTransactionId ?? "") < ($1.originalTransactionId ?? "") }
    }

    /// Apple's status of a subscription from its latest transaction, unless overridden.
    func status(of latest: JWSTransactionDecodedPayload) -> SubscriptionStatus {
        if let original = latest.originalTransactionId, let status = store.subscriptionOverride(original)?.status { return status }
        if latest.revocationDate != nil { return .revoked }
        if let expires = latest.expiresDate, expires > store.now() { return .active }
        return .expired
    }

    /// The renewal info of a subscription, overridden or derived from its latest transaction, not yet
    /// dated (`signedDate` nil: ``signedRenewalInfo(of:)`` dates it when it signs).
    func renewalInfo(of latest: JWSTransactionDecodedPayload) -> JWSRenewalInfoDecodedPayload {
        let original = latest.originalTransactionId ?? ""
        let status = status(of: latest)
        var info =
            store.subscriptionOverride(original)?.renewalInfo
            ?? JWSRenewalInfoDecodedPayload(
                originalTransactionId: original, autoRenewProductId: latest.productId, productId: latest.productId,
                autoRenewStatus: status == .active ? .on : .off, isInBillingRetryPeriod: status == .billingRetry,
                recentSubscriptionStartDate: latest.originalPurchaseDate, renewalDate: latest.expiresDate)
        info.originalTransactionId = original
        // Renewal info carries the purchase's token (API 1.15), Set App Account Token's included.
        if info.appAccountToken == nil { info.appAccountToken = latest.appAccountToken }
        info.environment = .sandbox
        info.signedDate = nil
        return info
    }
}
