import AppStore
import AppStoreServerAPI
import AppStoreSigning
import Foundation
import HTTPTypes

/// Turns stored data into what Apple returns: signed transactions, derived statuses and renewal info.
struct SimulatorSigning: Sendable {
    let signer: JWSSigner
    let store: SimulatorStore

    /// Signs a transaction as of now (`signedDate` = now, as Apple re-signs on every answer).
    func sign(_ transaction: JWSTransactionDecodedPayload) throws(SimulatorError) -> String {
        var payload = transaction
        payload.signedDate = store.now()
        return try sign(payload: payload)
    }

    func sign(payload: some Encodable) throws(SimulatorError) -> String {
        do {
            return try signer.sign(payload)
        } catch {
            throw SimulatorError(.internalServerError, 5_000_000, "signing failed")
        }
    }

    /// The latest transaction (by purchase date) of each auto-renewable subscription of a customer.
    func latestSubscriptionTransactions(customerID: String, bundleID: String) -> [JWSTransactionDecodedPayload] {
        var latest: [String: JWSTransactionDecodedPayload] = [:]
        for stored in store.transactions(customerID: customerID, bundleID: bundleID)
        where stored.payload.type == .autoRenewableSubscription {
            let t = stored.payload
            guard let original = t.originalTransactionId else { continue }
            if let current = latest[original], (current.purchaseDate ?? .distantPast, current.transactionId ?? "") >= (t.purchaseDate ?? .distantPast, t.transactionId ?? "") {
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

    /// The renewal info of a subscription, overridden or derived from its latest transaction.
    func renewalInfo(of latest: JWSTransactionDecodedPayload) -> JWSRenewalInfoDecodedPayload {
        let original = latest.originalTransactionId ?? ""
        let status = status(of: latest)
        var info = store.subscriptionOverride(original)?.renewalInfo ?? JWSRenewalInfoDecodedPayload(
            originalTransactionId: original, autoRenewProductId: latest.productId, productId: latest.productId,
            autoRenewStatus: status == .active ? .on : .off, isInBillingRetryPeriod: status == .billingRetry,
            recentSubscriptionStartDate: latest.originalPurchaseDate, renewalDate: latest.expiresDate)
        info.originalTransactionId = original
        info.environment = .sandbox
        info.signedDate = store.now()
        return info
    }
}
