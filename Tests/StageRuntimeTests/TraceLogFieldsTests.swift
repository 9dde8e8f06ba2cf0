import Logging
import OTel
import PipelineTracing
import StageRuntime
import Testing
import Tracing

/// Every process logs through a handler with ``ProcessTracing/logMetadataProvider``: a line written
/// inside a traced span names the span, so a log line leads to its trace.
@Suite("trace fields in log lines")
struct TraceLogFieldsTests {
    @Test("inside a span a line carries trace_id and span_id; outside one, neither")
    func traceFields() throws {
        var configuration = OTel.Configuration.default
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        // swift-otel's tracer, not installed process-wide (tests run side by side) and not exporting.
        let tracer = try OTel.makeTracingBackend(configuration: configuration).factory
        let sink = LineSink()
        let log = Logger(label: "appstore.test") { label in
            JSONLogHandler(label: label, metadataProvider: ProcessTracing.logMetadataProvider, sink: sink.sink)
        }
        log.info("outside")
        var injected: [String: String] = [:]
        tracer.withSpan("process appstore.notifications.raw.v1") { span in
            log.info("inside")
            tracer.inject(span.context, into: &injected, using: DictionaryInjector())
        }
        let lines = try sink.objects()
        try #require(lines.count == 2)
        #expect(lines[0]["trace_id"] == nil && lines[0]["span_id"] == nil)
        let traceparent = try #require(injected["traceparent"]).split(separator: "-").map(String.init)
        #expect(lines[1]["trace_id"] as? String == traceparent[1], "the span's own trace")
        #expect(lines[1]["span_id"] as? String == traceparent[2])
    }

    struct DictionaryInjector: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
    }
}
