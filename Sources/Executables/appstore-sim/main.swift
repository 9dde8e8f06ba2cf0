import AppStoreSimulator
import AsyncHTTPClient
import EnvironmentSettings
import Foundation
import Hummingbird
import Logging
import NIOSSL
import SimulatorLifecycleRoutes
import StageRuntime

/// `appstore-sim`: a simulated App Store Server API (Sandbox data only) for local runs and tests.
let usage = """
    appstore-sim: a simulated Apple App Store Server API for local runs and tests (Sandbox data only).

    USAGE: appstore-sim [--help]

    Configuration is read from environment variables:
      SIM_STATE_DIR  where the test CA (ca/*.pem) and the App Store Connect key (api-key.p8, api-key.json) are created on first start and reused [default: .local/appstore-sim]
      SIM_APPS       app Apple IDs to report, bundleId:appAppleId,… (optional)
      SIM_BUNDLE_ID  the app lifecycle runs play [default: com.example.entitlements]
      SIM_API_KEY_FILE, SIM_API_ISSUER_ID, SIM_API_KEY_ID  the App Store Connect key to accept instead of one made in SIM_STATE_DIR: a PKCS#8 PEM file, its issuer ID and key ID (all three or none)
      SIM_WEBHOOK_CA_FILE  PEM certificates trusted, besides the system's, when lifecycle runs deliver to an https webhook (a gateway's self-signed certificate) (optional)
      SIM_WEBHOOK_URL  where TEST notifications (Request a Test Notification) are POSTed, the full URL as in App Store Connect, e.g. http://127.0.0.1:8080/v2/notifications (optional; PUT /sim/webhook changes it)
      HTTP_HOST      [default: 127.0.0.1]
      HTTP_PORT      [default: 8090]
      LOG_LEVEL      [default: info]
      LOG_FORMAT     text, or json: one JSON object per line on stderr [default: text]

    API: /inApps/… as Apple's. Admin: GET /sim/ca/root.pem, GET /sim/api-key, POST /sim/transactions,
    PUT /sim/subscriptions/{originalTransactionId}, POST /sim/notifications, POST /sim/orders,
    GET /sim/consumption, GET|PUT /sim/webhook {"url":…}, GET|PUT|DELETE /sim/faults, GET|DELETE /sim/stats, POST /sim/reset.
    Lifecycles: POST /sim/lifecycle {"customers":N,"webhook":"http://127.0.0.1:8080","monthSeconds":300,
    "duplicateRate":0.1,"maxDelayMs":500,"reorderWindow":8,"dropRate":0,"retries":true,"seed":1} plays N
    customers through renewals, plan changes, billing retry, refunds… to the webhook (optional
    "firstCustomerIndex" keeps runs' transaction IDs apart); GET /sim/lifecycle shows progress, the
    delivery report and each customer's expected entitlements. POST /sim/lifecycle/prepare
    {"customers":N,"seed":1,"monthSeconds":300,"firstCustomerIndex":0} applies and signs N customers'
    lifecycles at once and answers the requests it would send, one a line: the path, a space, the body.
    """
let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
let env = ProcessInfo.processInfo.environment
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("configuration error: \(message)\n".utf8))
    exit(78)
}
guard let port = Int(env["HTTP_PORT"] ?? "8090"), (0...65535).contains(port) else { fail("HTTP_PORT must be a port number") }
var appAppleIDs: [String: Int64] = [:]
for entry in (env["SIM_APPS"] ?? "").split(separator: ",") where !entry.isEmpty {
    let parts = entry.split(separator: ":")
    guard parts.count == 2, let id = Int64(parts[1]) else { fail("SIM_APPS entries are bundleId:appAppleId (got \(entry))") }
    appAppleIDs[String(parts[0])] = id
}
let level = Logger.Level(rawValue: (env["LOG_LEVEL"] ?? "info").lowercased()) ?? .info
let logFormat: LogFormat
do { logFormat = try EnvironmentReader(env).logFormat() } catch { fail("LOG_FORMAT \(error.problem)") }
ProcessBootstrap.installLogging(level: level, format: logFormat)
let logger = Logger(label: "appstore.sim")
let stateDirectory = URL(fileURLWithPath: env["SIM_STATE_DIR"] ?? ".local/appstore-sim")
let keyVariables = ["SIM_API_KEY_FILE", "SIM_API_ISSUER_ID", "SIM_API_KEY_ID"].map { env[$0].flatMap { $0.isEmpty ? nil : $0 } }
if keyVariables.contains(where: { $0 != nil }), keyVariables.contains(where: { $0 == nil }) {
    fail("SIM_API_KEY_FILE, SIM_API_ISSUER_ID and SIM_API_KEY_ID are set together or not at all")
}
let configuredKey: SimulatorAPIKey?
if let file = keyVariables[0], let issuer = keyVariables[1], let keyID = keyVariables[2] {
    do { configuredKey = try SimulatorAPIKey.load(privateKeyFile: file, issuerID: issuer, keyID: keyID) } catch {
        fail("SIM_API_KEY_FILE must name a readable PKCS#8 P-256 key in PEM (\(file)): \(error)")
    }
} else {
    configuredKey = nil
}
let apple: SimulatedApple
do {
    apple = try SimulatedApple(stateDirectory: stateDirectory, apiKey: configuredKey, appAppleIDs: appAppleIDs)
} catch {
    FileHandle.standardError.write(Data("appstore-sim: cannot load or create its state in \(stateDirectory.path): \(error)\n".utf8))
    exit(1)
}
if let webhook = env["SIM_WEBHOOK_URL"], !webhook.isEmpty, !apple.store.setWebhookURL(webhook) {
    fail("SIM_WEBHOOK_URL must be an http(s) URL")
}
logger.info(
    "simulated Apple starting",
    metadata: [
        LogKey.simStateDirectory: "\(stateDirectory.path)", LogKey.simKeyID: "\(apple.apiKey.keyID)", LogKey.simIssuerID: "\(apple.apiKey.issuerID)",
        LogKey.httpPort: "\(port)",
    ])
var webhookClient = HTTPClient.shared
if let caFile = env["SIM_WEBHOOK_CA_FILE"], !caFile.isEmpty {
    guard FileManager.default.isReadableFile(atPath: caFile) else { fail("SIM_WEBHOOK_CA_FILE must name a readable PEM file (\(caFile))") }
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.additionalTrustRoots = [.file(caFile)]
    webhookClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
}
let router = apple.makeRouter()
LifecycleRoutes(
    runs: LifecycleRuns(apple: apple, defaultBundleID: env["SIM_BUNDLE_ID"] ?? "com.example.entitlements", client: webhookClient)
).register(on: router)
let app = Application(
    router: router,
    configuration: .init(address: .hostname(env["HTTP_HOST"] ?? "127.0.0.1", port: port), serverName: "appstore-sim"),
    logger: logger)
try await app.runService()
