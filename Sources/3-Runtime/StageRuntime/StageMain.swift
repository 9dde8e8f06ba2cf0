import EnvironmentSettings
import Foundation
import KafkaClient
import LogKeys
import Logging
import ServiceLifecycle

/// The whole `main` of a consuming stage: configuration, logging, metrics, the probe server, the
/// producer, the consumer and the runner, in one `ServiceGroup`. The runner joins its consumer
/// group only after the probe server has bound its port: a process that cannot start (the port
/// still held by the previous process, say) exits without ever having been a member.
public enum StageMain {
    /// - Parameters:
    ///   - makeStage: builds the stage from its configuration; returns it with any services it
    ///     needs running before it (a database client, say), in dependency order.
    public static func run(
        name: String, summary: String, defaults: StageConfiguration.Defaults,
        extraVariables: [SettingDescription] = [],
        makeStage: (StageConfiguration, EnvironmentReader, Logger) async throws -> (any PipelineStage, [any Service])
    ) async {
        ProcessBootstrap.handleHelp(
            ProcessBootstrap.usage(
                name: name, summary: summary, variables: StageConfiguration.variables(stage: name, defaults: defaults) + extraVariables))
        let env = EnvironmentReader()
        let config = ProcessBootstrap.configuration { try StageConfiguration(stage: name, defaults: defaults, environment: env) }
        let registry = ProcessBootstrap.bootstrap(logLevel: config.logLevel, logFormat: config.logFormat)
        let tracing = ProcessBootstrap.tracing(serviceName: name)
        var logger = Logger(label: "appstore.\(name)")
        logger[metadataKey: LogKey.stage] = "\(name)"
        let stage: any PipelineStage
        let extra: [any Service]
        do {
            (stage, extra) = try await makeStage(config, env, logger)
        } catch {
            exitFailedStart(error, logger: logger)
        }
        // The stage and its services stay alive until the process exits: a failure below is logged
        // before anything they hold (an HTTP client not yet shut down) is released.
        do {
            let producer = try KafkaProducer(configuration: config.producer, logger: logger)
            let (bound, bind) = AsyncStream.makeStream(of: Void.self)
            let runner = try StageRunner(
                stage: stage, consumerConfiguration: config.consumer, producer: producer,
                configuration: config.runner, logger: logger,
                startsAfter: {
                    for await _ in bound { break }
                })
            let probes = ProbeRoutes.server(
                host: config.httpHost, port: config.httpPort, registry: registry, stage: name, logger: logger,
                onServerRunning: { bind.finish() }, isReady: { runner.isReady })
            logger.info(
                "starting",
                metadata: [
                    LogKey.inputTopic: "\(config.inputTopic)", LogKey.group: "\(config.groupID)", LogKey.httpPort: "\(config.httpPort)",
                    LogKey.tasksOnEventLoops: "\(ProcessBootstrap.tasksRunOnEventLoops)", LogKey.tracing: "\(!tracing.isEmpty)",
                ])
            await ProcessBootstrap.run(
                tracing + [probes] + extra + [producer, runner.consumer, runner], shutdownTimeout: config.shutdownTimeout, logger: logger)
        } catch {
            exitFailedStart(error, logger: logger)
        }
    }

    /// A bad setting exits 78 with its one line; anything else is logged and exits 1.
    static func exitFailedStart(_ error: any Error, logger: Logger) -> Never {
        if let error = error as? ConfigurationError {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(78)
        }
        logger.critical("could not start", error: error)
        exit(1)
    }
}
