import AsyncHTTPClient
import EnvironmentSettings
import Foundation
import IngestService
import KafkaClient
import LogKeys
import Logging
import StageRuntime

ProcessBootstrap.runTasksOnEventLoops()

ProcessBootstrap.handleHelp(
    ProcessBootstrap.usage(
        name: "ingest",
        summary:
            "takes Apple's webhook (POST /v2/notifications) and authenticated app uploads (POST /v1/transactions) and stores each body in the raw topic before answering 200",
        variables: IngestConfiguration.variables))
let configuration = ProcessBootstrap.configuration { try IngestConfiguration(environment: EnvironmentReader()) }
let registry = ProcessBootstrap.bootstrap(logLevel: configuration.logLevel, logFormat: configuration.logFormat)
let tracing = ProcessBootstrap.tracing(serviceName: "ingest")
var logger = Logger(label: "appstore.ingest")
logger[metadataKey: LogKey.stage] = "ingest"
// The JWKS is fetched from its configured URL only: a redirect (even to plain http) is not followed.
// The client lives as long as the process.
let jwksClient = HTTPClient(
    eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
do {
    let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
    let authenticator = UploadAuthenticator(settings: configuration.uploadAuthentication, httpClient: jwksClient, logger: logger)
    await authenticator.prepare()
    let app = IngestApplication.build(
        configuration: configuration, producer: producer, registry: registry, logger: logger, authenticator: authenticator)
    logger.info(
        "starting",
        metadata: [
            LogKey.httpPort: "\(configuration.httpPort)", LogKey.topic: "\(configuration.rawTopic)",
            LogKey.uploadAuth: "\(configuration.uploadAuthentication)",
            LogKey.offerSigning: "\(configuration.offerSigning.map(\.description) ?? "off")",
            LogKey.tasksOnEventLoops: "\(ProcessBootstrap.tasksRunOnEventLoops)", LogKey.tracing: "\(!tracing.isEmpty)",
        ])
    // Shutdown runs in reverse: the server stops taking requests first, then the producer flushes,
    // then the last spans are exported.
    await ProcessBootstrap.run(tracing + [producer, app], shutdownTimeout: configuration.shutdownTimeout, logger: logger)
} catch {
    logger.critical("could not start", error: error)
    exit(1)
}
try? await jwksClient.shutdown()
