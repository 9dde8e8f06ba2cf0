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

    /// The variables, for `--help`: name, default, meaning.
    public static let variables: [(name: String, default: String, meaning: String)] = [
        ("APPSTORE_APPS", "(required)", "apps accepted: \(AppListParser.syntax)"),
        (
            "APPSTORE_TRUSTED_ROOTS", "",
            "comma-separated DER/PEM root files trusted besides Apple Root CA - G3 (test CA, simulator); never used for Production data"
        ),
        ("APPSTORE_VALIDATION_TIME", "signed-date", "when certificates must be valid: \(ValidationTimeOption.syntax)"),
        ("APPSTORE_CHAIN_CACHE", "on", "reuse verified certificate chains (on or off)"),
        ("APPSTORE_CHAIN_CACHE_MAX_AGE_S", "3600", "seconds before a cached chain is validated again"),
        ("APPSTORE_MAX_JWS_BYTES", "1048576", "larger JWS are rejected as malformed"),
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
        do {
            let trust = try AppStoreTrustSettings.read(
                apps: env.string("APPSTORE_APPS"), trustedRoots: env.string("APPSTORE_TRUSTED_ROOTS"))
            apps = trust.apps
            additionalTrustedRoots = trust.additionalTrustedRoots
        } catch {
            throw ConfigurationError(variable: error.variable, problem: error.problem)
        }
        validationTime = .signedDate
        if let raw = env.string("APPSTORE_VALIDATION_TIME") {
            guard let parsed = ValidationTimeOption.parse(raw) else {
                throw ConfigurationError(
                    variable: "APPSTORE_VALIDATION_TIME",
                    problem: "must be \(ValidationTimeOption.syntax) (got \"\(raw.prefix(60))\")")
            }
            validationTime = parsed
        }
        let cacheOn = try env.bool("APPSTORE_CHAIN_CACHE", default: true)
        let maximumAge = try env.int("APPSTORE_CHAIN_CACHE_MAX_AGE_S", default: 3600, in: 1...604_800)
        chainCache = ChainCachePolicy(isEnabled: cacheOn, maximumAge: Double(maximumAge))
        maximumJWSBytes = try env.int("APPSTORE_MAX_JWS_BYTES", default: 1 << 20, in: 1024...(16 << 20))
        // The verifier's own rules (a root to trust, unique bundle IDs…) surface here, at start.
        do {
            _ = try SignedDataVerifier(configuration: verifierConfiguration)
        } catch {
            throw ConfigurationError(variable: "APPSTORE_APPS", problem: "is not usable: \(error.message)")
        }
    }

    /// The verifier configuration: Apple Root CA - G3 always trusted, no online revocation checks.
    public var verifierConfiguration: SignedDataVerifier.Configuration {
        SignedDataVerifier.Configuration(
            apps: apps, additionalTrustedRoots: additionalTrustedRoots, validationTime: validationTime,
            chainCache: chainCache, maximumInputSize: maximumJWSBytes)
    }
}
