/// Verified signed data of any kind, as returned by ``SignedDataVerifier/verify(_:)``.
public enum VerifiedSignedData: Hashable, Sendable {
    case notification(VerifiedNotification)
    case transaction(JWSTransactionDecodedPayload)
    case renewalInfo(JWSRenewalInfoDecodedPayload)
    case appTransaction(AppTransaction)

    /// Which kind this is.
    public var kind: SignedDataKind {
        switch self {
        case .notification: .notification
        case .transaction: .transaction
        case .renewalInfo: .renewalInfo
        case .appTransaction: .appTransaction
        }
    }
}
