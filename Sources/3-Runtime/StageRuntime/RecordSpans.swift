import Instrumentation
import KafkaClient
import PipelineTracing
import Tracing

/// The spans of one batch's records, in order: a consumer span per record, each a child of the
/// trace context its headers carry (a new trace when they carry none). The records handed to the
/// stage carry their own span's context in their headers instead, so what a stage carries on to its
/// outputs (and grant keeps in its outbox) continues from its record's span, and the next stage's
/// span is that span's child.
///
/// The stage's work for a batch (an App Store lookup shared by several events, grant's one
/// transaction) runs in the first record's context; every later record's span links to that one.
/// With tracing off the tracer is a no-op: nothing is extracted or injected and the headers pass
/// through unchanged.
final class RecordSpans {
    private var spans: [any Span]
    private var next = 0
    /// The records, their headers carrying their spans' contexts.
    let records: [KafkaMessage]

    /// - Parameter tracer: the process's (a test's own in-memory one).
    init(_ batch: [KafkaMessage], stage: String, tracer: any Tracer = InstrumentationSystem.tracer) {
        var spans: [any Span] = []
        var records: [KafkaMessage] = []
        spans.reserveCapacity(batch.count)
        records.reserveCapacity(batch.count)
        for var message in batch {
            var parent = ServiceContext.topLevel
            tracer.extract(message.headers, into: &parent, using: KafkaHeadersExtractor())
            let span = tracer.startSpan(SpanName.process(message.topic), context: parent, ofKind: .consumer)
            if span.isRecording {
                span.updateAttributes { a in
                    a[SpanAttributeName.messagingSystem] = "kafka"
                    a[SpanAttributeName.messagingOperationType] = "process"
                    a[SpanAttributeName.messagingDestination] = message.topic
                    a[SpanAttributeName.messagingPartition] = "\(message.partition)"
                    a[SpanAttributeName.kafkaOffset] = Int64(message.offset)
                    a[SpanAttributeName.messagingConsumerGroup] = stage
                    if batch.count > 1 { a[SpanAttributeName.messagingBatchCount] = Int64(batch.count) }
                }
                if let first = spans.first { span.addLink(SpanLink(context: first.context, attributes: [:])) }
            }
            var injected: [KafkaHeader] = []
            tracer.inject(span.context, into: &injected, using: KafkaHeadersInjector())
            if !injected.isEmpty {
                // The span's context replaces the one the record came with (whatever keys the
                // propagator writes, and W3C's in any case).
                let replaced = Set(injected.map(\.key)).union([TraceHeader.traceparent, TraceHeader.tracestate])
                message.headers.removeAll { replaced.contains($0.key) }
                message.headers.append(contentsOf: injected)
            }
            spans.append(span)
            records.append(message)
        }
        self.spans = spans
        self.records = records
    }

    /// The context the stage's work for the records from `index` on runs in: the first of them's span.
    func context(from index: Int) -> ServiceContext {
        index < spans.count ? spans[index].context : .topLevel
    }

    /// The index of the first record not finished yet.
    var firstPending: Int { next }

    /// The next records were delivered, each having produced `outputs[i]` records: 0 says its
    /// journey ended here (enrich's dropped replay, grant's write to Postgres), so a trace that
    /// stops at this stage says why.
    func delivered(outputs: [Int], attempts: Int) {
        for count in outputs {
            guard next < spans.count else { return }
            if attempts > 1 { spans[next].attributes[SpanAttributeName.attempts] = Int64(attempts) }
            spans[next].attributes[SpanAttributeName.outputs] = Int64(count)
            spans[next].end()
            next += 1
        }
    }

    /// The next record will be tried again after `error` (a transient failure).
    func retrying(_ error: any Error, code: String, attempt: Int) {
        guard next < spans.count else { return }
        spans[next].recordError(error, attributes: [SpanAttributeName.errorType: .string(code), SpanAttributeName.attempts: .int64(Int64(attempt))])
    }

    /// The next record was set aside after `error`, to be tried again later: its span ends here.
    func parked(_ error: any Error, code: String, attempt: Int) {
        guard next < spans.count else { return }
        retrying(error, code: code, attempt: attempt)
        spans[next].attributes[SpanAttributeName.parked] = true
        spans[next].end()
        next += 1
    }

    /// The next record was dead-lettered with `code`.
    func deadLettered(code: String, attempts: Int) {
        guard next < spans.count else { return }
        let span = spans[next]
        span.attributes[SpanAttributeName.deadLetterCode] = code
        span.attributes[SpanAttributeName.errorType] = code
        span.attributes[SpanAttributeName.attempts] = Int64(attempts)
        span.setStatus(SpanStatus(code: .error, message: code))
        span.end()
        next += 1
    }

    /// Ends the spans of records left unfinished (the partition was revoked or the process is
    /// stopping): their next owner starts new spans for them, in the same trace.
    func endUnfinished() {
        while next < spans.count {
            spans[next].attributes["appstore.unfinished"] = true
            spans[next].end()
            next += 1
        }
    }
}
