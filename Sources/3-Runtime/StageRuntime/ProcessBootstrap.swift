import CTaskExecutorHook
import EnvironmentSettings
import Foundation
import Hummingbird
import KafkaClient
import Logging
import Metrics
import NIOCore
import NIOPosix
import PipelineTracing
import Prometheus
import ServiceLifecycle
import UnixSignals

/// Process-wide start-up shared by every executable: `--help`, configuration errors as one line,
/// logging and Prometheus metrics bootstrap.
public enum ProcessBootstrap {
    /// Prints `usage` and exits when `--help` or `-h` is among the arguments.
    public static func handleHelp(_ usage: String) {
        let args = CommandLine.arguments.dropFirst()
        if args.contains("--help") || args.contains("-h") {
            print(usage)
            exit(0)
        }
        if let unknown = args.first {
            FileHandle.standardError.write(Data("unknown argument \(unknown); configuration comes from the environment (see --help)\n".utf8))
            exit(2)
        }
    }

    /// Formats the environment variables for `--help`: each declared setting with its default.
    /// Only defaults are shown, never the environment's values, and a secret is marked as one.
    public static func usage(name: String, summary: String, variables: [SettingDescription]) -> String {
        var text = "\(name): \(summary)\n\nUSAGE: \(name) [--help]\n\nConfiguration is read from environment variables:\n"
        let width = variables.map(\.name.count).max() ?? 0
        for v in variables {
            let pad = String(repeating: " ", count: width - v.name.count)
            let secret = v.isSecret ? " (secret)" : ""
            text += "  \(v.name)\(pad)  \(v.meaning)\(secret)\(v.defaultText.isEmpty ? "" : " [default: \(v.defaultText)]")\n"
        }
        text += "\nTracing is off unless OpenTelemetry's variables turn it on (docs/configuration.md, \"Tracing\"):\n"
        for v in ProcessTracing.variables { text += "  \(v.name)  \(v.meaning)\n" }
        text += "\nExit status: 0 after a graceful shutdown (SIGTERM/SIGINT), 78 on a configuration error, 1 on a failure."
        return text
    }

    /// Reads configuration; on a ``ConfigurationError`` prints its one line and exits with 78.
    public static func configuration<T>(_ read: () throws -> T) -> T {
        do {
            return try read()
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(78)
        }
    }

    /// Installs stderr logging at `level` in `format` (see ``installLogging(level:format:)``) and
    /// Prometheus metrics; returns the metrics registry.
    public static func bootstrap(logLevel: Logger.Level, logFormat: LogFormat = .text) -> PrometheusCollectorRegistry {
        installLogging(level: logLevel, format: logFormat)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(metricsFactory(registry: registry))
        return registry
    }

    /// Installs the process's log handler: one escaped line per entry on stderr (``TextLogHandler``)
    /// for `text`, one JSON object per line on stderr (``JSONLogHandler``) for `json`.
    public static func installLogging(level: Logger.Level, format: LogFormat) {
        LoggingSystem.bootstrap(
            { label, provider -> any LogHandler in
                var handler: any LogHandler =
                    switch format {
                    case .text: TextLogHandler(label: label, metadataProvider: provider)
                    case .json: JSONLogHandler(label: label, metadataProvider: provider)
                    }
                handler.logLevel = level
                return handler
            }, metadataProvider: ProcessTracing.logMetadataProvider)
    }

    /// Installs tracing when OpenTelemetry's variables ask for it (``ProcessTracing``) and returns
    /// its exporter, to run first in the process's services (so it stops last, after the final
    /// spans); returns nothing when tracing is off. Call before any HTTP client or server is made.
    /// A bad variable exits 78, like ``configuration(_:)``.
    public static func tracing(serviceName: String) -> [any Service] {
        configuration { try ProcessTracing.bootstrap(serviceName: serviceName) }.map { [$0] } ?? []
    }

    /// The histogram buckets of every duration (swift-metrics `Timer`): 5 ms to 60 s, so that both a
    /// record's processing time and the webhook-to-entitlement latency have a bucket.
    public static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
    ]

    /// The swift-metrics factory over `registry` that every process installs: `.` in names and
    /// labels read as `_`, durations in ``durationBuckets``.
    public static func metricsFactory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = durationBuckets
        factory.nameAndLabelSanitizer = { name, labels in
            (name.replacingOccurrences(of: ".", with: "_"), labels.map { ($0.0.replacingOccurrences(of: ".", with: "_"), $0.1) })
        }
        return factory
    }

    /// Runs services in dependency order until SIGTERM or SIGINT, then shuts them down in reverse.
    public static func run(_ services: [any Service], shutdownTimeout: Duration, logger: Logger) async {
        var config = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        config.maximumGracefulShutdownDuration = shutdownTimeout
        config.maximumCancellationDuration = .seconds(5)
        let group = ServiceGroup(configuration: config)
        do {
            try await group.run()
        } catch {
            logger.critical("stopped on failure", error: error)
            exit(1)
        }
    }
}

extension ProcessBootstrap {
    /// Runs Swift's tasks on NIO's event loops, the threads that already do the process's network
    /// I/O (``CommonSettings/tasksOnEventLoops``, on unless set off). Otherwise every hop between a
    /// task and a channel wakes a thread of the other pool (a futex, an eventfd write): at 100
    /// notifications/s that was about a fifth of ingest's, enrich's and grant's CPU. Blocking calls
    /// never run on tasks here (librdkafka's have threads of their own), so no event loop is held up.
    ///
    /// Must be the first statement of `main`: the executor can change only before any task starts.
    /// Exits with 78 on a bad value, like ``configuration(_:)``.
    public static func runTasksOnEventLoops() {
        guard configuration({ try EnvironmentReader().read(CommonSettings.tasksOnEventLoops) }) else { return }
        // The hook's shape (a job, then the runtime's own enqueue, passed as C passes two pointers)
        // is the runtime's, not a promise: used only by the compilers NIO's own takeover supports.
        #if compiler(<6.6)
            // The event loop is the caller's own when it runs on one (`any()` prefers it), so a hop
            // between a channel and a task mostly stays on its thread.
            let enqueue: @convention(c) (UnsafeMutableRawPointer, UnsafeRawPointer?) -> Void = { job, _ in
                MultiThreadedEventLoopGroup.singleton.any().enqueue(ExecutorJob(unsafeBitCast(job, to: UnownedJob.self)))
            }
            // Not when somebody else's executor is installed already: leave it.
            tasksRunOnEventLoops = appstore_task_enqueue_global_hook_install(unsafeBitCast(enqueue, to: UnsafeMutableRawPointer.self))
        #endif
    }

    /// Whether ``runTasksOnEventLoops()`` moved the tasks (logged when the process starts).
    nonisolated(unsafe) public private(set) static var tasksRunOnEventLoops = false
}
