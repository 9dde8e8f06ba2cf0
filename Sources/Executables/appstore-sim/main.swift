import AppStoreSimulator
import AsyncHTTPClient
import EnvironmentSettings
import Foundation
import Hummingbird
import LogKeys
import Logging
import NIOSSL
import SimulatorLifecycleRoutes
import StageRuntime

ProcessBootstrap.runTasksOnEventLoops()

/// `appstore-sim`: a simulated App Store Server API (Sandbox data only) for local runs and tests.
/// Each variable is declared once: read below, listed by `--help`.
enum SimulatorSettings {
    static let stateDirectory = Setting<String>.text(
        "SIM_STATE_DIR", default: ".local/appstore-sim",
        meaning: "where the test CA (ca/*.pem) and the App Store Connect key (api-key.p8, api-key.json) are created on first start and reused")
    static let apps = Setting<String?>.optional("SIM_APPS", meaning: "app Apple IDs to report, bundleId:appAppleId,… (optional)")
    static let bundleId = Setting<String>.text("SIM_BUNDLE_ID", default: "com.example.entitlements", meaning: "the app lifecycle runs play")
    static let apiKeyFile = Setting<String?>.optional(
        "SIM_API_KEY_FILE",
        meaning:
            "the App Store Connect key to accept instead of one made in SIM_STATE_DIR: a PKCS#8 PEM file (with SIM_API_ISSUER_ID and SIM_API_KEY_ID: all three or none)"
    )
    static let apiIssuerID = Setting<String?>.optional("SIM_API_ISSUER_ID", meaning: "the issuer ID of SIM_API_KEY_FILE")
    static let apiKeyID = Setting<String?>.optional("SIM_API_KEY_ID", meaning: "the key ID of SIM_API_KEY_FILE")
    static let webhookCAFile = Setting<String?>.optional(
        "SIM_WEBHOOK_CA_FILE",
        meaning:
            "PEM certificates trusted, besides the system's, when lifecycle runs deliver to an https webhook (a gateway's self-signed certificate) (optional)"
    )
    static let webhookURL = Setting<String?>.optional(
        "SIM_WEBHOOK_URL",
        meaning:
            "where TEST notifications (Request a Test Notification) are POSTed, the full URL as in App Store Connect, e.g. http://127.0.0.1:8080/v2/notifications (optional; PUT /sim/webhook changes it)"
    )
    static let httpHost = Setting<String>.text("HTTP_HOST", default: "127.0.0.1", meaning: "where the API and the admin routes are served")
    static let httpPort = Setting<Int>.int("HTTP_PORT", default: 8090, in: 0...65535, meaning: "the port of HTTP_HOST")
    static let ocspBaseURL = Setting<String?>.optional(
        "SIM_OCSP_BASE_URL", shown: "http://<HTTP_HOST, 127.0.0.1 for 0.0.0.0>:<HTTP_PORT>/ocsp",
        meaning:
            "where verifiers reach this simulator's OCSP responder, named in its intermediate's and leaf's AIA (<url>/root, <url>/intermediate); "
            + "a stored CA naming another URL gets a new intermediate and leaf under the same root on start; none: a new CA names none, a stored one is kept as it is"
    )

    static let variables = [
        stateDirectory.help, apps.help, bundleId.help, apiKeyFile.help, apiIssuerID.help, apiKeyID.help, webhookCAFile.help,
        webhookURL.help, httpHost.help, httpPort.help, ocspBaseURL.help, CommonSettings.logLevel.help, CommonSettings.logFormat.help,
        CommonSettings.tasksOnEventLoops.help,
    ]
}

/// What `appstore-sim` reads at start; each problem is one line naming its variable (exit 78).
struct SimulatorConfiguration {
    var stateDirectory: URL
    var appAppleIds: [String: Int64] = [:]
    var bundleId: String
    /// The App Store Connect key's file, issuer ID and key ID, when all three are set.
    var apiKey: (file: String, issuerID: String, keyID: String)?
    var webhookCAFile: String?
    var webhookURL: String?
    var httpHost: String
    var httpPort: Int
    /// The OCSP base URL the CA's certificates name; `nil` for none.
    var ocspBaseURL: String?
    var logLevel: Logger.Level
    var logFormat: LogFormat

    init(environment env: EnvironmentReader) throws(ConfigurationError) {
        httpPort = try env.read(SimulatorSettings.httpPort)
        httpHost = try env.read(SimulatorSettings.httpHost)
        for entry in (try env.read(SimulatorSettings.apps) ?? "").split(separator: ",") where !entry.isEmpty {
            let parts = entry.split(separator: ":")
            guard parts.count == 2, let id = Int64(parts[1]) else {
                throw ConfigurationError(variable: "SIM_APPS", problem: "entries are bundleId:appAppleId (got \(entry))")
            }
            appAppleIds[String(parts[0])] = id
        }
        logLevel = try env.logLevel()
        logFormat = try env.logFormat()
        stateDirectory = URL(fileURLWithPath: try env.read(SimulatorSettings.stateDirectory))
        bundleId = try env.read(SimulatorSettings.bundleId)
        let keyParts = (
            try env.read(SimulatorSettings.apiKeyFile), try env.read(SimulatorSettings.apiIssuerID), try env.read(SimulatorSettings.apiKeyID)
        )
        switch keyParts {
        case (let file?, let issuer?, let keyID?): apiKey = (file, issuer, keyID)
        case (nil, nil, nil): apiKey = nil
        default:
            throw ConfigurationError(
                variable: "SIM_API_KEY_FILE", problem: "is set together with SIM_API_ISSUER_ID and SIM_API_KEY_ID, or none of them")
        }
        webhookURL = try env.read(SimulatorSettings.webhookURL)
        webhookCAFile = try env.read(SimulatorSettings.webhookCAFile)
        if let caFile = webhookCAFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ConfigurationError(variable: "SIM_WEBHOOK_CA_FILE", problem: "must name a readable PEM file (\(caFile))")
        }
        ocspBaseURL = try Self.ocspBaseURL(try env.read(SimulatorSettings.ocspBaseURL), host: httpHost, port: httpPort)
    }

    /// The configured OCSP base URL without a trailing slash, or the simulator's own address when
    /// unset (none when the port is picked at random: nothing could name it in advance).
    static func ocspBaseURL(_ configured: String?, host: String, port: Int) throws(ConfigurationError) -> String? {
        guard let configured else {
            guard port != 0 else { return nil }
            let reachable = ["0.0.0.0", "::", ""].contains(host) ? "127.0.0.1" : host
            return "http://\(reachable.contains(":") ? "[\(reachable)]" : reachable):\(port)/ocsp"
        }
        if configured.lowercased() == "none" { return nil }
        var url = configured
        while url.hasSuffix("/") { url.removeLast() }
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil,
            parsed.query == nil
        else {
            throw ConfigurationError(
                variable: "SIM_OCSP_BASE_URL", problem: "must be an http(s) URL without a query, or none (got \"\(configured.prefix(80))\")")
        }
        return url
    }
}

let api = """
    API: /inApps/… as Apple's. Admin: GET /sim/ca/root.pem, GET /sim/api-key, POST /sim/transactions,
    PUT /sim/subscriptions/{originalTransactionId}, POST /sim/notifications, POST /sim/orders,
    GET /sim/consumption, GET|PUT /sim/webhook {"url":…}, GET|PUT|DELETE /sim/faults, GET|DELETE /sim/stats, POST /sim/reset.
    OCSP: POST /ocsp/root, POST /ocsp/intermediate (RFC 6960 over POST, the URLs the CA's certificates name);
    GET /sim/ocsp, PUT|DELETE /sim/ocsp/revoked/{leaf|intermediate}, PUT /sim/ocsp/fault {"mode":"none|unavailable|malformed"},
    DELETE /sim/ocsp/fault.
    Lifecycles: POST /sim/lifecycle {"customers":N,"webhook":"http://127.0.0.1:8080","monthSeconds":300,
    "duplicateRate":0.1,"maxDelayMs":500,"reorderWindow":8,"dropRate":0,"retries":true,"seed":1} plays N
    customers through renewals, plan changes, billing retry, refunds… to the webhook (optional
    "firstCustomerIndex" keeps runs' transaction IDs apart); GET /sim/lifecycle shows progress, the
    delivery report and each customer's expected entitlements. POST /sim/lifecycle/prepare
    {"customers":N,"seed":1,"monthSeconds":300,"firstCustomerIndex":0} applies and signs N customers'
    lifecycles at once and answers the requests it would send, one a line: the path, a space, the body.
    """
ProcessBootstrap.handleHelp(
    ProcessBootstrap.usage(
        name: "appstore-sim", summary: "a simulated Apple App Store Server API for local runs and tests (Sandbox data only).",
        variables: SimulatorSettings.variables) + "\n\n" + api)
let configuration = ProcessBootstrap.configuration { try SimulatorConfiguration(environment: EnvironmentReader()) }
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("configuration error: \(message)\n".utf8))
    exit(78)
}
ProcessBootstrap.installLogging(level: configuration.logLevel, format: configuration.logFormat)
let logger = Logger(label: "appstore.sim")
let stateDirectory = configuration.stateDirectory
let configuredKey: SimulatorAPIKey?
if let key = configuration.apiKey {
    do { configuredKey = try SimulatorAPIKey.load(privateKeyFile: key.file, issuerID: key.issuerID, keyID: key.keyID) } catch {
        fail("SIM_API_KEY_FILE must name a readable PKCS#8 P-256 key in PEM (\(key.file)): \(error)")
    }
} else {
    configuredKey = nil
}
let apple: SimulatedApple
do {
    apple = try SimulatedApple(
        stateDirectory: stateDirectory, apiKey: configuredKey, appAppleIds: configuration.appAppleIds, ocspBaseURL: configuration.ocspBaseURL)
} catch {
    FileHandle.standardError.write(Data("appstore-sim: cannot load or create its state in \(stateDirectory.path): \(error)\n".utf8))
    exit(1)
}
if let webhook = configuration.webhookURL, !apple.store.setWebhookURL(webhook) {
    fail("SIM_WEBHOOK_URL must be an http(s) URL")
}
logger.info(
    "simulated Apple starting",
    metadata: [
        LogKey.simStateDirectory: "\(stateDirectory.path)", LogKey.simKeyID: "\(apple.apiKey.keyID)", LogKey.simIssuerID: "\(apple.apiKey.issuerID)",
        LogKey.httpPort: "\(configuration.httpPort)", LogKey.simOCSPBaseURL: "\(configuration.ocspBaseURL ?? "none")",
        LogKey.tasksOnEventLoops: "\(ProcessBootstrap.tasksRunOnEventLoops)",
    ])
var webhookClient = HTTPClient.shared
if let caFile = configuration.webhookCAFile {
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.additionalTrustRoots = [.file(caFile)]
    webhookClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
}
let router = apple.makeRouter()
LifecycleRoutes(
    runs: LifecycleRuns(apple: apple, defaultBundleId: configuration.bundleId, client: webhookClient)
).register(on: router)
let app = Application(
    router: router,
    configuration: .init(address: .hostname(configuration.httpHost, port: configuration.httpPort), serverName: "appstore-sim"),
    logger: logger)
try await app.runService()
