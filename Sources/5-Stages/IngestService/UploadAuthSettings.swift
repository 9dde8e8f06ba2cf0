import AppStore
import Crypto
import EnvironmentSettings
import Foundation

/// How `POST /v1/transactions` proves who uploads (`INGEST_UPLOAD_AUTH`). There is no default:
/// a deployment that forgot to choose must not start with open uploads.
public enum UploadAuthMode: String, CaseIterable, Sendable {
    /// A bearer JWT from the app's identity provider; the user is one of its claims.
    case jwt
    /// An HMAC over the timestamp and the body from the app's backend, which vouches for the body's `userId`.
    case hmac
    /// No credential; allowed only when every app is Sandbox-only.
    case none
}

/// The checked settings of the chosen ``UploadAuthMode``.
public enum UploadAuthSettings: Sendable, CustomStringConvertible {
    case jwt(JWTUploadSettings)
    case hmac(HMACUploadSettings)
    /// Open uploads (`none`): only reachable through ``OpenUploadSettings/init(apps:)``, which
    /// refuses any app that accepts Production.
    case open(OpenUploadSettings)

    public var mode: UploadAuthMode {
        switch self {
        case .jwt: .jwt
        case .hmac: .hmac
        case .open: .none
        }
    }

    /// One line for the start log: never a secret.
    public var description: String {
        switch self {
        case .jwt(let s): "jwt (keys \(s.keys), issuer \(s.issuer), audience \(s.audience), user claim \(s.userClaim))"
        case .hmac(let s): "hmac (replay window \(s.window))"
        case .open(let s): "none (open uploads; Sandbox-only apps \(s.bundleIds.joined(separator: ",")))"
        }
    }

    /// No default: a missing choice is refused with the three choices named.
    public static let modeSetting = Setting<UploadAuthMode>(
        name: "INGEST_UPLOAD_AUTH", defaultText: "(required)",
        meaning: "how POST /v1/transactions is authenticated: jwt, hmac, or none (refused unless no app in APPSTORE_APPS accepts Production)"
    ) { env throws(ConfigurationError) in
        guard let raw = env.string("INGEST_UPLOAD_AUTH") else {
            throw ConfigurationError(
                variable: "INGEST_UPLOAD_AUTH",
                problem:
                    "is required but not set: choose jwt (the app's identity provider), hmac (a backend's signature) or none (open uploads, Sandbox-only apps)"
            )
        }
        guard let mode = UploadAuthMode(rawValue: raw.lowercased()) else {
            throw ConfigurationError(variable: "INGEST_UPLOAD_AUTH", problem: "must be one of jwt, hmac, none (got \"\(raw.prefix(40))\")")
        }
        return mode
    }
    public static let jwks = Setting<String>.required(
        "INGEST_UPLOAD_JWKS", shown: "(jwt: required)",
        meaning: "the identity provider's keys: a JWKS file path or an https URL (cached, refetched on an unknown kid)")
    public static let issuer = Setting<String>.required(
        "INGEST_UPLOAD_ISSUER", shown: "(jwt: required)", meaning: "the token's iss must equal it")
    public static let audience = Setting<String>.required(
        "INGEST_UPLOAD_AUDIENCE", shown: "(jwt: required)", meaning: "the token's aud must contain it")
    public static let userClaim = Setting<String>.text(
        "INGEST_UPLOAD_USER_CLAIM", default: "sub", meaning: "the token claim stored as the upload's userId (the body's userId is ignored)")
    public static let leeway = Setting<Int>.int(
        "INGEST_UPLOAD_LEEWAY_S", default: 60, in: 0...600, meaning: "clock tolerance for exp and nbf")
    public static let jwksRefresh = Setting<Int>.int(
        "INGEST_UPLOAD_JWKS_REFRESH_S", default: 600, in: 10...86_400,
        meaning: "refetch the JWKS URL (or reread the file) when older than this")
    public static let jwksRefetchMinimum = Setting<Int>.int(
        "INGEST_UPLOAD_JWKS_REFETCH_MIN_S", default: 30, in: 0...3600,
        meaning: "at most one refetch per this many seconds for tokens naming an unknown key")
    /// The file's name is not secret; its contents are, and are never printed.
    public static let hmacSecretFile = Setting<String>.required(
        "INGEST_UPLOAD_HMAC_SECRET_FILE", shown: "(hmac: required)",
        meaning: "file holding the shared secret (at least 32 bytes; a trailing newline is dropped)")
    public static let hmacWindow = Setting<Int>.int(
        "INGEST_UPLOAD_HMAC_WINDOW_S", default: 300, in: 1...3600, meaning: "X-Upload-Timestamp accepted this far from now, either way")

    /// The variables, for `--help`.
    public static let variables = [
        modeSetting.help, jwks.help, issuer.help, audience.help, userClaim.help, leeway.help, jwksRefresh.help, jwksRefetchMinimum.help,
        hmacSecretFile.help, hmacWindow.help, AppStoreTrustSettings.appsSetting.help,
    ]

    /// Reads `INGEST_UPLOAD_AUTH` and the variables its mode needs; each problem is one line
    /// naming its variable.
    public static func read(_ env: EnvironmentReader) throws(ConfigurationError) -> UploadAuthSettings {
        let mode = try env.read(modeSetting)
        switch mode {
        case .jwt:
            let keys = try JWTUploadSettings.KeySource.parse(try env.read(jwks), variable: jwks.name)
            if case .file(let path) = keys {
                // A wrong file is a start error, not a 401 for every upload later.
                do {
                    _ = try UploadKeyStore.entries(try UploadKeyStore.readFile(path))
                } catch {
                    throw ConfigurationError(variable: "INGEST_UPLOAD_JWKS", problem: "names \(path), which \(error.problem)")
                }
            }
            return .jwt(
                JWTUploadSettings(
                    keys: keys,
                    issuer: try env.read(issuer),
                    audience: try env.read(audience),
                    userClaim: try env.read(userClaim),
                    leeway: .seconds(try env.read(leeway)),
                    refreshInterval: .seconds(try env.read(jwksRefresh)),
                    refetchMinimumInterval: .seconds(try env.read(jwksRefetchMinimum))))
        case .hmac:
            let path = try env.read(hmacSecretFile)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(variable: "INGEST_UPLOAD_HMAC_SECRET_FILE", problem: "names a file that cannot be read (\(path))")
            }
            let secret: HMACUploadSettings.Secret
            do {
                secret = try HMACUploadSettings.Secret(fileContents: Array(data))
            } catch {
                throw ConfigurationError(variable: "INGEST_UPLOAD_HMAC_SECRET_FILE", problem: "names \(path), which \(error.problem)")
            }
            return .hmac(
                HMACUploadSettings(
                    secret: secret, window: .seconds(try env.read(hmacWindow))))
        case .none:
            let settings: AppStoreTrustSettings
            do {
                settings = try AppStoreTrustSettings(environment: env, readingTrustedRoots: false)
            } catch {
                throw ConfigurationError(
                    variable: error.variable,
                    problem: "\(error.problem) (INGEST_UPLOAD_AUTH=none needs it: open uploads are allowed only when every app is Sandbox-only)")
            }
            do {
                return .open(try OpenUploadSettings(apps: settings.apps))
            } catch {
                throw ConfigurationError(variable: "INGEST_UPLOAD_AUTH", problem: error.problem)
            }
        }
    }
}

/// Bearer JWTs from the app's identity provider.
public struct JWTUploadSettings: Sendable {
    /// Where the public keys (a JWKS) come from.
    public enum KeySource: Sendable, Equatable, CustomStringConvertible {
        /// A JWKS file, read again on refresh (a mounted secret or ConfigMap can rotate).
        case file(String)
        /// An https URL, fetched and cached.
        case url(URL)

        public var description: String {
            switch self {
            case .file(let path): path
            case .url(let url): url.absoluteString
            }
        }

        /// A file path or an https URL. Plain http is refused (keys must not be swappable in
        /// transit), except `http://127.0.0.1`/`localhost` when `allowLoopbackHTTP`, which only
        /// tests set: it is not read from the environment.
        public static func parse(
            _ value: String, variable: String = "INGEST_UPLOAD_JWKS", allowLoopbackHTTP: Bool = false
        ) throws(ConfigurationError) -> KeySource {
            let lowered = value.lowercased()
            guard lowered.contains("://") else { return .file(value) }
            guard let url = URL(string: value), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
                throw ConfigurationError(variable: variable, problem: "is not a usable URL (\(value.prefix(200)))")
            }
            switch scheme {
            case "https":
                return .url(url)
            case "http" where allowLoopbackHTTP && (host == "127.0.0.1" || host == "localhost"):
                return .url(url)
            case "http":
                throw ConfigurationError(
                    variable: variable, problem: "must be a file path or an https URL: plain http is refused, the keys could be swapped in transit")
            default:
                throw ConfigurationError(
                    variable: variable, problem: "must be a file path or an https URL (got a URL with scheme \(scheme.prefix(20)))")
            }
        }
    }

    public var keys: KeySource
    /// The token's `iss` must equal this.
    public var issuer: String
    /// The token's `aud` (a string or an array) must contain this.
    public var audience: String
    /// The claim that names the user (`sub` unless configured).
    public var userClaim: String
    /// Tolerated clock difference for `exp` and `nbf`.
    public var leeway: Duration
    /// How old the cached key set may get before it is fetched again.
    public var refreshInterval: Duration
    /// The least time between two fetches caused by tokens naming a key the cache lacks, so
    /// that made-up `kid`s cannot turn ingest into a load generator against the identity provider.
    public var refetchMinimumInterval: Duration

    public init(
        keys: KeySource, issuer: String, audience: String, userClaim: String = "sub", leeway: Duration = .seconds(60),
        refreshInterval: Duration = .seconds(600), refetchMinimumInterval: Duration = .seconds(30)
    ) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.userClaim = userClaim
        self.leeway = leeway
        self.refreshInterval = refreshInterval
        self.refetchMinimumInterval = refetchMinimumInterval
    }
}

/// HMAC-signed uploads from the app's backend.
public struct HMACUploadSettings: Sendable {
    /// The shared secret. Its description never shows the bytes.
    public struct Secret: Sendable, CustomStringConvertible {
        /// Why a secret file cannot be used.
        public struct Problem: Error, Sendable { public let problem: String }

        let key: SymmetricKey

        /// The file's bytes, trailing line breaks dropped (editors and `echo` add one). At least
        /// 32 bytes: HMAC-SHA256's own strength.
        public init(fileContents bytes: [UInt8]) throws(Problem) {
            var bytes = bytes[...]
            while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
            guard bytes.count >= 32 else {
                throw Problem(problem: "holds \(bytes.count) bytes; a secret needs at least 32 (e.g. `openssl rand -hex 32`)")
            }
            key = SymmetricKey(data: bytes)
        }

        public var description: String { "(secret, \(key.bitCount / 8) bytes)" }
    }

    public var secret: Secret
    /// How far `X-Upload-Timestamp` may be from now, either way.
    public var window: Duration

    public init(secret: Secret, window: Duration = .seconds(300)) {
        self.secret = secret
        self.window = window
    }
}

/// Open uploads, for Sandbox-only deployments (the local demo, a staging cluster).
public struct OpenUploadSettings: Sendable {
    /// Why open uploads are refused for these apps.
    public struct Refusal: Error, Sendable { public let problem: String }

    /// The test-only apps (Sandbox, or StoreKit Testing in Xcode) that made open uploads acceptable.
    public let bundleIds: [String]

    /// Refuses unless there is at least one app and no app accepts Production: a
    /// Production purchase must never be claimed by whoever posts its JWS.
    public init(apps: [AppStoreApp]) throws(Refusal) {
        guard !apps.isEmpty else {
            throw Refusal(problem: "is none (open uploads), which needs APPSTORE_APPS to list the Sandbox-only apps")
        }
        let production = apps.filter { !$0.environments.isSubset(of: [.sandbox, .xcode]) }.map(\.bundleId)
        guard production.isEmpty else {
            throw Refusal(
                problem:
                    "is none (open uploads), which is refused: APPSTORE_APPS accepts Production for \(production.joined(separator: ", ")); anyone could claim a real purchase, so use jwt or hmac (none is for Sandbox-only apps)"
            )
        }
        bundleIds = apps.map(\.bundleId)
    }
}
