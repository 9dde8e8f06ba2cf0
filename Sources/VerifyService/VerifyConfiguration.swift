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

    /// The variables, for `--help`.
    public static let variables = [
        AppStoreTrustSettings.appsSetting.help, AppStoreTrustSettings.trustedRootsSetting.help, validationTimeSetting.help, chainCacheSetting.help,
        chainCacheMaxAge.help, maxJWSBytes.help,
    ]

    public init(
        apps: [AppStoreApp], additionalTrustedRoots: [Certificate] = [],
        validationTime: SignedDataVerifier.ValidationTime = .signedDate, chainCache: ChainCachePolicy = .default,
        maximumJWSBytes: Int = 1 << 20
    ) {
        self.apps = apps
        self.additionalTrustedRoots = additionalTrustedRoots
        self.validationTime = validationTime
        self.chainCache = chainCache
        self.maximumJWSBytes = maximumJWSBytes
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
        try AppStoreTrustSettings.checkAtStart(verifierConfiguration)
    }

    /// The verifier configuration: Apple Root CA - G3 always trusted, no online revocation checks.
    public var verifierConfiguration: SignedDataVerifier.Configuration {
        SignedDataVerifier.Configuration(
            apps: apps, additionalTrustedRoots: additionalTrustedRoots, validationTime: validationTime,
            chainCache: chainCache, maximumInputSize: maximumJWSBytes)
    }
}
