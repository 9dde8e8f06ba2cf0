import X509

/// How `appstorectl inspect` checks a token: the app it must belong to and what to trust.
///
/// Values left `nil` are taken from the token's own (unverified) claims, so support can paste a
/// token without knowing its app; the tool then says which values it assumed.
public struct InspectOptions: Sendable {
    /// The bundle ID the token must name.
    public var bundleId: String?
    /// The app Apple ID a Production notification or app transaction must name.
    public var appAppleId: Int64?
    /// The environment the token must name (Sandbox or Production).
    public var environment: AppStoreEnvironment?
    /// Roots trusted besides Apple Root CA - G3 (never for Production data, as in the pipeline).
    public var trustedRoots: [Certificate]
    /// When certificates must be valid.
    public var validationTime: SignedDataVerifier.ValidationTime
    /// Whether to ask each certificate's OCSP responder, as verify does with `APPSTORE_REVOCATION_CHECK=on`
    /// (certificates are then valid at the current time); `nil`: no revocation check.
    public var revocationChecking: RevocationChecking?

    public init(
        bundleId: String? = nil, appAppleId: Int64? = nil, environment: AppStoreEnvironment? = nil,
        trustedRoots: [Certificate] = [], validationTime: SignedDataVerifier.ValidationTime = .signedDate,
        revocationChecking: RevocationChecking? = nil
    ) {
        self.revocationChecking = revocationChecking
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.trustedRoots = trustedRoots
        self.validationTime = validationTime
    }
}
