/// The kinds of signed data Apple produces for an app.
///
/// Used to route input whose kind is not known in advance (the `inspect` CLI, app uploads) and to
/// refuse data of the wrong kind handed to a kind-specific method.
public enum SignedDataKind: String, Codable, Hashable, Sendable, CaseIterable {
    /// An App Store Server Notification V2 payload.
    case notification
    /// A transaction (`JWSTransactionDecodedPayload`).
    case transaction
    /// Subscription renewal info (`JWSRenewalInfoDecodedPayload`).
    case renewalInfo = "renewal_info"
    /// An app transaction.
    case appTransaction = "app_transaction"

    /// The kind a decoded payload object looks like, from the keys only each kind has; `nil` when the
    /// keys fit none.
    static func detect(keys: Set<String>) -> SignedDataKind? {
        if keys.contains("notificationType") || keys.contains("notificationUUID") {
            return .notification
        }
        if keys.contains("receiptType") || keys.contains("receiptCreationDate") {
            return .appTransaction
        }
        if keys.contains("transactionId") {
            return .transaction
        }
        let renewalKeys = [
            "autoRenewStatus", "autoRenewProductId", "renewalDate", "expirationIntent",
            "isInBillingRetryPeriod", "gracePeriodExpiresDate", "priceIncreaseStatus", "renewalPrice",
        ]
        if renewalKeys.contains(where: { keys.contains($0) }) {
            return .renewalInfo
        }
        return nil
    }
}
