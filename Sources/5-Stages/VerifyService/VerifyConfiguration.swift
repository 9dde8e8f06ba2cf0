import AppStore
import EnvironmentSettings
import Foundation
import StageRuntime
import X509

/// What the verify stage trusts and accepts, read from `APPSTORE_*` environment variables at start.
///
/// Every value is checked before the stage consumes anything: a bad one stops the process with
/// one line naming the variable, rather than dead-lettering every notification later.
public struct VerifyConfiguration: Sendable {
    /// The apps accepted, with their environments.
    public var apps: [AppStoreApp]
    /// Roots trusted besides Apple Root CA - G3; honoured for non-Production data only.
    public var additionalTrustedRoots: [Certificate]
    /// When certificates must be valid.
    public var validationTime: SignedDataVerifier.ValidationTime
    /// Reuse of verified chains.
    public var chainCache: ChainCachePolicy
    /// Largest JWS accepted, in bytes.
    public var maximumJWSBytes: Int
    /// Whether the leaf and intermediate of every chain are checked with OCSP (at the current time).
    public var checksRevocation: Bool
    /// How OCSP requests reach the responder when ``checksRevocation`` is on: HTTP unless a test says otherwise.
    public var ocspTransport: any OCSPTransport

    public static let validationTimeSetting = Setting<SignedDataVerifier.ValidationTime>(
        name: "APPSTORE_VALIDATION_TIME", defaultText: "signed-date", meaning: "when certificates must be valid: \(ValidationTimeOption.syntax)"
    ) { env throws(ConfigurationError) in
        guard let raw = env.string("APPSTORE_VALIDATION_TIME") else { return .signedDate }
        guard let parsed = ValidationTimeOption.parse(raw) else {
            throw ConfigurationError(
                variable: "APPSTORE_VALIDATION_TIME", problem: "must be \(ValidationTimeOption.syntax) (got \"\(raw.prefix(60))\")")
        }
        return parsed
    }
    public static let chainCacheSetting = Setting<Bool>.flag(
        "APPSTORE_CHAIN_CACHE", default: true, shown: "on", meaning: "reuse verified certificate chains (on or off)")
    public static let chainCacheMaxAge = Setting<Int>.int(
        "APPSTORE_CHAIN_CACHE_MAX_AGE_S", default: 3600, in: 1...604_800, meaning: "seconds before a cached chain is validated again")
    public static let maxJWSBytes = Setting<Int>.int(
        "APPSTORE_MAX_JWS_BYTES", default: 1 << 20, in: 1024...(16 << 20), meaning: "larger JWS are rejected as malformed")
    /// `APPSTORE_REVOCATION_CHECK`: spelled off or on, so a typo stops the stage instead of meaning off.
    public enum RevocationCheck: String, CaseIterable, Sendable {
        case off, on
    }
    public static let revocationCheckSetting = Setting<RevocationCheck>.choice(
        "APPSTORE_REVOCATION_CHECK", default: .off, ignoringCase: true,
        meaning:
            "on: ask each certificate's OCSP responder whether the leaf and intermediate are revoked, validating at the current time; "
            + "answers kept 15 min per chain; an unreachable responder is retried (off or on)")

    /// The variables, for `--help`.
    public static let variables = [
        AppStoreTrustSettings.appsSetting.help, AppStoreTrustSettings.trustedRootsSetting.help, validationTimeSetting.help, chainCacheSetting.help,
        chainCacheMaxAge.help, maxJWSBytes.help, revocationCheckSetting.help,
    ]

    public init(
        apps: [AppStoreApp], additionalTrustedRoots: [Certificate] = [],
        validationTime: SignedDataVerifier.ValidationTime = .signedDate, chainCache: ChainCachePolicy = .default,
        maximumJWSBytes: Int = 1 << 20, checksRevocation: Bool = false, ocspTransport: any OCSPTransport = HTTPOCSPTransport()
    ) {
        self.apps = apps
        self.additionalTrustedRoots = additionalTrustedRoots
        self.validationTime = validationTime
        self.chainCache = chainCache
        self.maximumJWSBytes = maximumJWSBytes
        self.checksRevocation = checksRevocation
        self.ocspTransport = ocspTransport
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        let trust = try AppStoreTrustSettings(environment: env)
        apps = trust.apps
        additionalTrustedRoots = trust.additionalTrustedRoots
        validationTime = try env.read(Self.validationTimeSetting)
        let cacheOn = try env.read(Self.chainCacheSetting)
        let maximumAge = try env.read(Self.chainCacheMaxAge)
        chainCache = ChainCachePolicy(isEnabled: cacheOn, maximumAge: Double(maximumAge))
        maximumJWSBytes = try env.read(Self.maxJWSBytes)
        checksRevocation = try env.read(Self.revocationCheckSetting) == .on
        ocspTransport = HTTPOCSPTransport()
        if checksRevocation, case .fixed = validationTime {
            // An OCSP answer speaks of now; checking it against certificates valid at another time proves nothing.
            throw ConfigurationError(
                variable: "APPSTORE_REVOCATION_CHECK",
                problem: "on validates certificates at the current time, so APPSTORE_VALIDATION_TIME must be signed-date or now, not a fixed date")
        }
        try AppStoreTrustSettings.checkAtStart(verifierConfiguration)
    }

    /// The verifier configuration: Apple Root CA - G3 always trusted; OCSP with Apple's 15-minute
    /// answer lifetime when ``checksRevocation`` is on.
    public var verifierConfiguration: SignedDataVerifier.Configuration {
        SignedDataVerifier.Configuration(
            apps: apps, additionalTrustedRoots: additionalTrustedRoots, validationTime: validationTime,
            revocationChecking: checksRevocation ? RevocationChecking(transport: ocspTransport) : nil,
            chainCache: chainCache, maximumInputSize: maximumJWSBytes)
    }
}
