import AppStore
import Foundation
import KafkaClient
import PipelineMessages
import PipelineRecords
import Testing

/// Each record kind's key and headers, as schemas/headers.md promises them to every consumer.
@Suite("record builders")
struct RecordMessagesTests {
    let ingestedAt = Date(timeIntervalSince1970: 1_790_000_000.125)

    @Test("a raw record: keyed by its body's hash, with every header ingest promises, traceparent only when given")
    func raw() {
        let body = RawRecord.notificationBody(signedPayload: "a.b.c")
        let message = RawMessage.make(
            body: body, topic: "raw-test", source: PipelineHeader.Source.appleWebhook, ingestedAt: ingestedAt, requestID: "req-1",
            traceContext: [KafkaHeader(key: PipelineHeader.traceparent, string: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")])
        #expect(message.topic == "raw-test")
        #expect(message.key == Array(RawRecord.key(of: body).utf8))
        #expect(message.value == body)
        #expect(message.headers.string(PipelineHeader.source) == "apple-webhook")
        #expect(message.headers.string(PipelineHeader.ingestedAt) == "2026-09-21T14:13:20.125Z")
        #expect(message.headers.string(PipelineHeader.requestID) == "req-1")
        #expect(message.headers.string(PipelineHeader.contentType) == "application/json")
        #expect(message.headers.string(PipelineHeader.schema) == Topics.raw)
        #expect(message.headers.string(PipelineHeader.traceparent) == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")

        let untraced = RawMessage.make(body: body, source: PipelineHeader.Source.notificationHistory)
        #expect(untraced.topic == Topics.raw)
        #expect(untraced.headers.string(PipelineHeader.traceparent) == nil)
        #expect(UUID(uuidString: untraced.headers.string(PipelineHeader.requestID) ?? "") != nil)
    }

    @Test("a stage's output carries its input's headers, drops a replayed record's dead-letter headers, and names its own schema")
    func carried() throws {
        let input = [
            KafkaHeader(key: PipelineHeader.source, string: "app-upload"),
            KafkaHeader(key: PipelineHeader.requestID, string: "req-2"),
            KafkaHeader(key: PipelineHeader.traceparent, string: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            KafkaHeader(key: PipelineHeader.schema, string: Topics.raw),
            KafkaHeader(key: PipelineHeader.contentType, string: "text/plain"),
            KafkaHeader(key: DeadLetterHeader.errorCode, string: "verification.invalid_signature"),
            KafkaHeader(key: DeadLetterHeader.attempts, string: "3"),
            KafkaHeader(key: DeadLetterHeader.replayedFrom, string: "appstore.verify.dlq.v1[0]@7"),
        ]
        let record = VerifiedRecord(
            kind: .transaction, source: "app-upload", environment: .sandbox, bundleId: "com.example", originalTransactionId: "2000",
            verifiedAt: ingestedAt)
        let verified = try VerifiedMessage.make(record, key: try #require(record.key), topic: "verified-test", following: input)
        #expect(verified.key == Array("Sandbox:2000".utf8))
        #expect(verified.headers.map(\.key) == ["source", "request-id", "traceparent", "content-type", "schema"])
        #expect(verified.headers.string(PipelineHeader.schema) == Topics.verified)
        #expect(verified.headers.string(PipelineHeader.contentType) == "application/json")
        #expect(try VerifiedRecord.decode(verified.value).originalTransactionId == "2000")

        let enriched = EnrichedMessage.make(body: [1, 2], key: verified.key, following: verified.headers)
        #expect(enriched.topic == Topics.enriched)
        #expect(enriched.key == verified.key)
        #expect(enriched.headers.map(\.key) == ["source", "request-id", "traceparent", "content-type", "schema"])
        #expect(enriched.headers.string(PipelineHeader.schema) == Topics.enriched)
    }

    @Test("a record an operator job fetched gets ingest's headers; one with no transaction or notification is refused")
    func fresh() throws {
        let record = VerifiedRecord(
            kind: .transaction, source: PipelineHeader.Source.reconcile, environment: .production, bundleId: "com.example",
            originalTransactionId: "42", verifiedAt: ingestedAt)
        let message = try VerifiedMessage.make(record)
        #expect(message.topic == Topics.verified)
        #expect(message.key == Array("Production:42".utf8))
        #expect(message.headers.string(PipelineHeader.source) == "reconcile")
        #expect(message.headers.string(PipelineHeader.ingestedAt) == "2026-09-21T14:13:20.125Z")
        #expect(message.headers.string(PipelineHeader.schema) == Topics.verified)

        let unkeyed = VerifiedRecord(kind: .transaction, source: "reconcile", environment: .production, bundleId: "x", verifiedAt: ingestedAt)
        #expect(throws: VerifiedMessage.UnkeyedRecord.self) { try VerifiedMessage.make(unkeyed) }
    }

    @Test("a record kept from before the rename carries received-at: read as ingested-at, and carried on only under the new name")
    func legacyIngestedAt() throws {
        let old = [
            KafkaHeader(key: PipelineHeader.source, string: "apple-webhook"),
            KafkaHeader(key: "received-at", string: "2026-09-21T14:13:20.125Z"),
            KafkaHeader(key: PipelineHeader.requestID, string: "req-3"),
        ]
        let raw = KafkaMessage(topic: Topics.raw, partition: 0, offset: 0, key: nil, value: [], headers: old, timestamp: nil)
        #expect(raw.ingestedAt == ingestedAt)

        let verified = PipelineHeader.carried(from: old, schema: Topics.verified)
        #expect(verified.map(\.key) == ["source", "ingested-at", "request-id", "content-type", "schema"])
        #expect(verified.string(PipelineHeader.ingestedAt) == "2026-09-21T14:13:20.125Z")

        // Both names (a record some tool wrote by hand): the new one counts, and only it goes on.
        let both = old + [KafkaHeader(key: PipelineHeader.ingestedAt, string: "2026-09-21T14:13:21.000Z")]
        let later = ingestedAt.addingTimeInterval(0.875)
        #expect(KafkaMessage(topic: Topics.raw, partition: 0, offset: 0, key: nil, value: [], headers: both, timestamp: nil).ingestedAt == later)
        let carried = PipelineHeader.carried(from: both, schema: Topics.verified)
        #expect(carried.map(\.key) == ["source", "ingested-at", "request-id", "content-type", "schema"])
        #expect(carried.string(PipelineHeader.ingestedAt) == "2026-09-21T14:13:21.000Z")

        let none = KafkaMessage(topic: Topics.raw, partition: 0, offset: 0, key: nil, value: [], headers: [], timestamp: nil)
        #expect(none.ingestedAt == nil)
        #expect(!PipelineHeader.carried(from: [], schema: Topics.verified).contains { $0.key.hasSuffix("-at") })
    }
}
