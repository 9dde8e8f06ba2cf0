/// A notification whose JWS, and every JWS nested in it, passed verification.
///
/// This is what the verify stage publishes: the decoded notification plus its decoded transaction,
/// renewal info or app transaction, and the app identity the checks resolved.
public struct VerifiedNotification: Codable, Hashable, Sendable {
    /// The decoded notification (its nested JWS strings are kept as received).
    public var payload: ResponseBodyV2DecodedPayload
    /// The verified `data.signedTransactionInfo`, when present.
    public var transaction: JWSTransactionDecodedPayload?
    /// The verified `data.signedRenewalInfo`, when present.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    /// The verified `appData.signedAppTransactionInfo`, when present.
    public var appTransaction: AppTransaction?
    /// The environment the checks accepted.
    public var environment: AppStoreEnvironment
    /// The bundle ID the checks accepted.
    public var bundleId: String
    /// The configured app Apple ID of that app, if configured.
    public var appAppleId: Int64?

    public init(
        payload: ResponseBodyV2DecodedPayload,
        transaction: JWSTransactionDecodedPayload? = nil,
        renewalInfo: JWSRenewalInfoDecodedPayload? = nil,
        appTransaction: AppTransaction? = nil,
        environment: AppStoreEnvironment,
        bundleId: String,
        appAppleId: Int64? = nil
    ) {
        self.payload = payload
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
    }
}
