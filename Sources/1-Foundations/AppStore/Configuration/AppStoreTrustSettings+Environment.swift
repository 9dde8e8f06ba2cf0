import EnvironmentSettings

extension AppStoreTrustSettings {
    /// `APPSTORE_APPS`, declared once for every process that reads it (verify, enrich, the operator
    /// tool, ingest with open uploads).
    public static let appsSetting = Setting<String?>.optional(
        "APPSTORE_APPS", shown: "(required)", meaning: "apps accepted: \(AppListParser.syntax)")
    /// `APPSTORE_TRUSTED_ROOTS`, declared once.
    public static let trustedRootsSetting = Setting<String?>.optional(
        "APPSTORE_TRUSTED_ROOTS",
        meaning: "comma-separated DER/PEM root files trusted besides Apple Root CA - G3 (test CA, simulator); never used for Production data"
    )

    /// Reads `APPSTORE_APPS` and, unless `readingTrustedRoots` is false (a process that verifies
    /// nothing), `APPSTORE_TRUSTED_ROOTS`; a problem is one line naming its variable.
    public init(environment env: EnvironmentReader, readingTrustedRoots: Bool = true) throws(ConfigurationError) {
        let apps = try env.read(Self.appsSetting)
        let roots = readingTrustedRoots ? try env.read(Self.trustedRootsSetting) : nil
        do {
            self = try Self.read(apps: apps, trustedRoots: roots)
        } catch {
            throw ConfigurationError(variable: error.variable, problem: error.problem)
        }
    }

    /// Builds a verifier from `configuration` once, so the verifier's own rules (a root to trust,
    /// unique bundle IDs…) stop the process at start rather than fail every record later.
    public static func checkAtStart(_ configuration: SignedDataVerifier.Configuration) throws(ConfigurationError) {
        do {
            _ = try SignedDataVerifier(configuration: configuration)
        } catch {
            throw ConfigurationError(variable: appsSetting.name, problem: "is not usable: \(error.message)")
        }
    }
}
