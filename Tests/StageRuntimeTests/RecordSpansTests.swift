import InMemoryTracing
import KafkaClient
import Testing
import Tracing

@testable import StageRuntime

/// The runner's span per record: a child of the context its headers carry, its own context in the
/// headers the stage sees, and an end that says how the record ended.
@Suite("record spans")
struct RecordSpansTests {
    static func record(offset: Int64, headers: [KafkaHeader]) -> KafkaMessage {
        KafkaMessage(topic: "in", partition: 3, offset: offset, key: nil, value: [], headers: headers, timestamp: nil)
    }

    @Test("each record's span continues its headers' trace; the stage sees the span's own context; later records link to the first")
    func continuesAndRewrites() throws {
        let tracer = InMemoryTracer()
        let upstream = tracer.startSpan("upstream", context: .topLevel)
        var carried: [KafkaHeader] = [KafkaHeader(key: "schema", string: "x")]
        tracer.inject(upstream.context, into: &carried, using: KafkaHeadersInjector())
        upstream.end()
        let spans = RecordSpans([Self.record(offset: 7, headers: carried), Self.record(offset: 8, headers: [])], stage: "verify", tracer: tracer)

        let active = tracer.activeSpans
        #expect(active.count == 2)
        let first = try #require(active.first { $0.attributes["messaging.kafka.offset"]?.toSpanAttribute() == .int64(7) })
        let second = try #require(active.first { $0.attributes["messaging.kafka.offset"]?.toSpanAttribute() == .int64(8) })
        #expect(first.operationName == "process in" && first.kind == .consumer)
        #expect(first.traceID == upstream.traceID && first.parentSpanID == upstream.spanID, "a child of the upstream span")
        #expect(second.parentSpanID == nil && second.traceID != upstream.traceID, "no context: a trace of its own")
        #expect(second.links.count == 1, "it links to the batch's first record, whose context the batch's work runs in")
        #expect(first.attributes["messaging.destination.partition.id"]?.toSpanAttribute() == .string("3"))
        #expect(first.attributes["messaging.batch.message_count"]?.toSpanAttribute() == .int64(2))

        // The stage sees the record span's own context, its other headers untouched.
        let seen = spans.records[0].headers
        #expect(seen.string("schema") == "x")
        #expect(seen.string(InMemoryTracer.spanIDKey) == first.spanID)
        #expect(seen.filter { $0.key == InMemoryTracer.spanIDKey }.count == 1, "replaced, not appended beside the upstream's")
        #expect(spans.context(from: 0).inMemorySpanContext?.spanID == first.spanID)
    }

    @Test(
        "a delivered record's span ends with its attempts and its outputs' count; a dead-lettered one with its code and an error status; a left one is marked"
    )
    func endings() throws {
        let tracer = InMemoryTracer()
        let spans = RecordSpans((0..<5).map { Self.record(offset: $0, headers: []) }, stage: "enrich", tracer: tracer)
        struct Outage: Error {}
        spans.retrying(Outage(), code: "apple_api.unavailable", attempt: 1)
        spans.delivered(outputs: [1], attempts: 2)
        spans.deadLettered(code: "record.malformed", attempts: 1)
        spans.delivered(outputs: [0, 2], attempts: 1)
        #expect(spans.firstPending == 4)
        spans.endUnfinished()

        let finished = tracer.finishedSpans
        #expect(finished.count == 5)
        let delivered = try #require(finished.first { $0.attributes["messaging.kafka.offset"]?.toSpanAttribute() == .int64(0) })
        #expect(delivered.errors.count == 1 && delivered.status?.code != .error, "the retried failure is recorded; the record still succeeded")
        #expect(delivered.attributes["appstore.attempts"]?.toSpanAttribute() == .int64(2))
        #expect(delivered.attributes["appstore.outputs"]?.toSpanAttribute() == .int64(1))
        // A record that produced nothing (a dropped replay) says so: its trace ends there on purpose.
        let dropped = try #require(finished.first { $0.attributes["messaging.kafka.offset"]?.toSpanAttribute() == .int64(2) })
        #expect(dropped.attributes["appstore.outputs"]?.toSpanAttribute() == .int64(0))
        #expect(dropped.attributes["appstore.attempts"] == nil, "tried once")
        let fanned = try #require(finished.first { $0.attributes["messaging.kafka.offset"]?.toSpanAttribute() == .int64(3) })
        #expect(fanned.attributes["appstore.outputs"]?.toSpanAttribute() == .int64(2))
        let dead = try #require(finished.first { $0.attributes["messaging.kafka.offset"]?.toSpanAttribute() == .int64(1) })
        #expect(dead.status?.code == .error)
        #expect(dead.attributes["appstore.dead_letter.code"]?.toSpanAttribute() == .string("record.malformed"))
        let left = try #require(finished.first { $0.attributes["messaging.kafka.offset"]?.toSpanAttribute() == .int64(4) })
        #expect(left.attributes["appstore.unfinished"]?.toSpanAttribute() == .bool(true))
    }
}
