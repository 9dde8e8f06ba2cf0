import Foundation
import IngestService
import KafkaClient
import Logging
import StageRuntime

ProcessBootstrap.handleHelp(ProcessBootstrap.usage(
    name: "ingest",
    summary: "takes Apple's webhook (POST /v2/notifications) and app uploads (POST /v1/transactions) and stores each body in the raw topic before answering 200",
    variables: IngestConfiguration.variables))
let configuration = ProcessBootstrap.configuration { try IngestConfiguration(environment: EnvironmentReader()) }
let registry = ProcessBootstrap.bootstrap(logLevel: configuration.logLevel, logFormat: configuration.logFormat)
var logger = Logger(label: "appstore.ingest")
logger[metadataKey: LogKey.stage] = "ingest"
do {
    let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
    let app = IngestApplication.build(configuration: configuration, producer: producer, registry: registry, logger: logger)
    logger.info("starting", metadata: [LogKey.httpPort: "\(configuration.httpPort)", LogKey.topic: "\(configuration.rawTopic)"])
    // Shutdown runs in reverse: the server stops taking requests first, then the producer flushes.
    await ProcessBootstrap.run([producer, app], shutdownTimeout: configuration.shutdownTimeout, logger: logger)
} catch {
    logger.critical("could not start", error: error)
    exit(1)
}
