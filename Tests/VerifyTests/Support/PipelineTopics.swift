import Foundation
import KafkaClient
import Logging
import PipelineRecords
import ServiceLifecycle
import StageRuntime
import TestSupport
import VerifyService

/// Topics of one pipeline test: raw in, verified and DLQ out.
struct PipelineTopics {
    let raw: String
    let verified: String
    let deadLetters: String

    static func make(_ prefix: String) async throws -> PipelineTopics {
        PipelineTopics(
            raw: try await TestServices.makeTopic("\(prefix)-raw", partitions: 4),
            verified: try await TestServices.makeTopic("\(prefix)-verified", partitions: 4),
            deadLetters: try await TestServices.makeTopic("\(prefix)-dlq"))
    }
}

/// Produces raw records with the headers ingest writes.
func produceRaw(_ topic: String, _ bodies: [(body: [UInt8], source: String)]) async throws {
    let producer = try TestServices.makeProducer()
    let messages = bodies.enumerated().map { index, item in
        KafkaOutgoingMessage(
            topic: topic, key: "raw-\(index)", value: item.body,
            headers: [
                KafkaHeader(key: PipelineHeader.source, string: item.source),
                KafkaHeader(key: PipelineHeader.ingestedAt, string: Timestamp.iso8601(Date())),
                KafkaHeader(key: PipelineHeader.requestID, string: "req-\(index)"),
                KafkaHeader(key: PipelineHeader.contentType, string: "application/json"),
                KafkaHeader(key: PipelineHeader.schema, string: Topics.raw),
                KafkaHeader(
                    key: PipelineHeader.traceparent, string: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920\(String(format: "%04x", index))-01"),
            ])
    }
    _ = try await producer.sendAll(messages)
    await producer.close()
}

extension KafkaMessage {
    func header(_ key: String) -> String? { headers.string(key) }
}
