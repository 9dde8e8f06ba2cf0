import AppStore
import Foundation

/// Derives a purchase's state from one event's facts (its transaction in force, renewal info and
/// status), before the ordering guard decides whether those facts are newer than what is stored.
/// A revocation the policy does not honour (a prorated refund kept, ``GrantPolicy/revokes(_:)``)
/// leaves the purchase as if it had none.
enum PurchaseDerivation {
    static func state(
        for event: GrantEvent, key: PurchaseKey, productType: ProductType, previous: PurchaseState?, policy: GrantPolicy
    ) throws(GrantRejection) -> PurchaseState {
        guard let tx = event.transaction else { throw GrantRejection.missingPurchase("carries no transaction") }
        let renewal = event.renewalInfo
        guard let productId = tx.productId ?? renewal?.productId, !productId.isEmpty else {
            throw GrantRejection.missingPurchase("its transaction has no productId")
        }
        let revokes = policy.revokes(tx)
        var state = PurchaseState(
            key: key, productType: productType.rawValue, productId: productId,
            lifecycle: .active, purchaseDate: tx.purchaseDate, expiresAt: tx.expiresDate,
            revokedAt: revokes ? tx.revocationDate : nil, revocationReason: tx.revocationReason?.rawValue,
            revocationType: tx.revocationType?.rawValue, latestTransactionId: tx.transactionId,
            subscriptionGroupId: tx.subscriptionGroupIdentifier, claims: previous?.claims ?? [],
            version: event.version, lastSignedDate: event.signedDate, lastEventKey: event.eventKey)
        state.originalPurchaseDate = tx.originalPurchaseDate
        state.isUpgraded = tx.isUpgraded ?? false

        guard productType == .autoRenewableSubscription else {
            state.lifecycle = revokes ? .revoked : .active
            return state
        }
        if let renewal {
            state.autoRenewProductId = renewal.autoRenewProductId
            state.autoRenewEnabled = renewal.autoRenewStatus.map { $0 == .on }
            state.gracePeriodExpiresAt = renewal.gracePeriodExpiresDate
            state.priceIncreaseStatus = renewal.priceIncreaseStatus?.rawValue
            state.expirationIntent = renewal.expirationIntent?.rawValue
            state.recentSubscriptionStartDate = renewal.recentSubscriptionStartDate
        } else if let previous {
            // An event without renewal info says nothing about renewal: keep what is known.
            state.autoRenewProductId = previous.autoRenewProductId
            state.autoRenewEnabled = previous.autoRenewEnabled
            state.gracePeriodExpiresAt = previous.gracePeriodExpiresAt
            state.priceIncreaseStatus = previous.priceIncreaseStatus
            state.expirationIntent = previous.expirationIntent
            state.recentSubscriptionStartDate = previous.recentSubscriptionStartDate
        }
        state.appleStatus = event.appleStatus?.rawValue
        state.lifecycle = lifecycle(event: event, transaction: tx, renewal: renewal, revokes: revokes)
        state.isInBillingRetry =
            renewal?.isInBillingRetryPeriod
            ?? (state.lifecycle == .billingRetry || state.lifecycle == .gracePeriod)
        return state
    }

    /// Apple's status decides; without one, the notification's type and the dates do.
    static func lifecycle(
        event: GrantEvent, transaction tx: JWSTransactionDecodedPayload, renewal: JWSRenewalInfoDecodedPayload?, revokes: Bool
    ) -> Lifecycle {
        if revokes { return .revoked }
        // A prorated refund the policy keeps: Apple's "revoked" status and the REFUND itself are about it.
        let keptRefund = tx.revocationDate != nil
        if tx.isUpgraded == true { return .expired }
        switch event.appleStatus {
        case .active?: return .active
        case .billingGracePeriod?: return .gracePeriod
        case .billingRetry?: return .billingRetry
        case .expired?: return .expired
        case .revoked?: if !keptRefund { return .revoked }
        case .unknown?, nil: break
        }
        switch event.notificationType {
        case .expired?: return .expired
        case .gracePeriodExpired?: return .billingRetry
        case .didFailToRenew?: return event.subtype == .gracePeriod ? .gracePeriod : .billingRetry
        case .revoke?, .refund?: if !keptRefund { return .revoked }
        default: break
        }
        let asOf = event.version.asOf
        if renewal?.isInBillingRetryPeriod == true {
            if let grace = renewal?.gracePeriodExpiresDate, grace > asOf { return .gracePeriod }
            return .billingRetry
        }
        if let expires = tx.expiresDate, expires <= asOf { return .expired }
        return .active
    }
}
