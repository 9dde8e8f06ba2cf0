import Foundation
import X509

/// The apps and extra trust anchors a process accepts, read from the two settings every stage that
/// verifies App Store data shares (`APPSTORE_APPS`, `APPSTORE_TRUSTED_ROOTS`).
///
/// One reader for verify, enrich and the operator tool, so the same value means the same thing
/// everywhere; each caller wraps ``ReadError`` into its own configuration error.
public struct AppStoreTrustSettings: Sendable {
    /// A value that cannot be used: which setting and why (never a secret; file paths only).
    public struct ReadError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The setting's name, e.g. `APPSTORE_APPS`.
        public let variable: String
        public let problem: String
        public var description: String { "\(variable) \(problem)" }
    }

    /// The apps accepted, with their environments.
    public var apps: [AppStoreApp]
    /// Roots trusted besides Apple Root CA - G3; honoured for non-Production data only.
    public var additionalTrustedRoots: [Certificate]

    /// Parses both values.
    /// - Parameters:
    ///   - apps: `APPSTORE_APPS` (required): ``AppListParser/syntax``.
    ///   - trustedRoots: `APPSTORE_TRUSTED_ROOTS`: comma-separated DER/PEM files, or `nil`.
    public static func read(apps: String?, trustedRoots: String?) throws(ReadError) -> AppStoreTrustSettings {
        guard let apps, !apps.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ReadError(variable: "APPSTORE_APPS", problem: "is required but not set")
        }
        let parsedApps: [AppStoreApp]
        do {
            parsedApps = try AppListParser.parse(apps)
        } catch {
            throw ReadError(variable: "APPSTORE_APPS", problem: error.problem)
        }
        return AppStoreTrustSettings(apps: parsedApps, additionalTrustedRoots: try readRoots(trustedRoots))
    }

    /// The roots `APPSTORE_TRUSTED_ROOTS` names (comma-separated DER/PEM files; none when `nil`), for
    /// the verifiers and for ingest's upload pre-check alike.
    public static func readRoots(_ trustedRoots: String?) throws(ReadError) -> [Certificate] {
        var roots: [Certificate] = []
        for path in (trustedRoots ?? "").split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !path.isEmpty {
            do {
                roots += try TrustedRootFile.load(path)
            } catch {
                throw ReadError(variable: "APPSTORE_TRUSTED_ROOTS", problem: "names \(error)")
            }
        }
        return roots
    }
}
