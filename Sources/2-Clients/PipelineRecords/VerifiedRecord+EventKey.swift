import AppStore

extension VerifiedRecord {
    /// The event's deduplication key, the one grant records (scoped by ``environment``):
    /// `notification:<notificationUUID>` for a notification, `transaction:<transactionId>:<signedDate ms>`
    /// for a signed transaction on its own (an app upload, a reconciled transaction); `nil` when the
    /// record lacks what the key needs. Here so enrich can drop a replay before it costs an API call
    /// without depending on grant.
    public var eventKey: String? {
        switch kind {
        case .notification:
            guard let uuid = notificationUUID ?? notification?.notificationUUID, !uuid.isEmpty else { return nil }
            return "notification:\(uuid)"
        case .transaction:
            guard let id = transaction?.transactionId, !id.isEmpty else { return nil }
            let signed = transaction?.signedDate.map { AppStoreJSON.milliseconds(since1970: $0) } ?? 0
            return "transaction:\(id):\(signed)"
        }
    }
}
