import Foundation
import Instrumentation
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// A process's tracing, configured by OpenTelemetry's standard variables and off unless they ask
/// for it: then swift-distributed-tracing's no-op tracer stays installed and a span costs next to
/// nothing. When on, swift-otel's tracer is the process's tracer (W3C `traceparent`/`tracestate`
/// propagation) and its exporter (OTLP over HTTP, batched) runs as a service.
public enum ProcessTracing {
    /// The OpenTelemetry variables a process reads, for `--help` and docs/configuration.md.
    public static let variables: [(name: String, meaning: String)] = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP/HTTP collector base URL (…/v1/traces is appended); setting it turns tracing on"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "the traces URL itself, instead of the base URL; setting it turns tracing on"),
        ("OTEL_TRACES_EXPORTER", "otlp turns tracing on with the default endpoint (http://localhost:4318), none turns it off"),
        ("OTEL_SDK_DISABLED", "true turns tracing off whatever else is set"),
        ("OTEL_TRACES_SAMPLER", "parentbased_always_on (default), parentbased_traceidratio, always_on, always_off, traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "the ratio of a traceidratio sampler, 0 to 1"),
        ("OTEL_SERVICE_NAME", "the service name on every span (default: the executable's name)"),
        ("OTEL_RESOURCE_ATTRIBUTES", "more resource attributes, key1=value1,key2=value2 (k8s.pod.name, say)"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "headers sent with every export (an API key, say)"),
        ("OTEL_BSP_SCHEDULE_DELAY", "how long spans wait to be exported in a batch, ms (default 5000)"),
    ]

    /// Whether the environment asks for traces: an OTLP endpoint or `OTEL_TRACES_EXPORTER` set
    /// (other than `none`), and `OTEL_SDK_DISABLED` not `true`.
    public static func isRequested(_ environment: [String: String]) -> Bool {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return false }
        if let exporter = environment["OTEL_TRACES_EXPORTER"], !exporter.isEmpty { return exporter.lowercased() != "none" }
        return environment["OTEL_EXPORTER_OTLP_ENDPOINT"]?.isEmpty == false
            || environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]?.isEmpty == false
    }

    /// Installs swift-otel's tracer as the process's tracer when the environment asks for traces,
    /// and returns the service that exports them (to run first in the process's `ServiceGroup`, so
    /// it stops last and the final spans go out); returns nil and installs nothing otherwise. Call
    /// once, before any HTTP client or server is made: they take the tracer installed then.
    public static func bootstrap(serviceName: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> (any Service)? {
        guard isRequested(environment) else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        return backend.service
    }

    /// Adds `trace_id` and `span_id` to every log entry made inside a traced span, so a log line
    /// leads to its trace; nothing outside one.
    public static var logMetadataProvider: Logger.MetadataProvider { OTel.makeLoggingMetadataProvider() }
}
