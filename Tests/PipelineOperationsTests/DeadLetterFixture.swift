import ErrorClassification
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import StageRuntime
import TestSupport

/// A stage with fresh input and dead-letter topics (`prefix-in`, `prefix-dlq`) and `letters` dead
/// letters in it: records of the input that "failed" with alternating codes (`verification.invalid_signature`,
/// `record.malformed`) after `attempts` attempts, written as StageRunner writes them. The caller
/// closes the producer.
func makeStageWithDeadLetters(_ prefix: String, letters: Int, attempts: Int = 1) async throws -> (PipelineStageInfo, KafkaProducer) {
    let input = try await TestServices.makeTopic("\(prefix)-in", partitions: 2)
    let dlq = try await TestServices.makeTopic("\(prefix)-dlq", partitions: 2)
    let stage = PipelineStageInfo(
        name: "test-\(UUID().uuidString.prefix(6))", groupID: TestServices.uniqueGroup("\(prefix)-stage"),
        inputTopic: input, outputTopic: nil, deadLetterTopic: dlq)
    let producer = try TestServices.makeProducer()
    let records = (0..<letters).map { i in
        let original = KafkaMessage(
            topic: input, partition: Int32(i % 2), offset: Int64(i / 2), key: Array("key-\(i)".utf8),
            value: Array("{\"n\":\(i)}".utf8), headers: [KafkaHeader(key: "source", string: "apple-webhook")], timestamp: Date())
        let failure = FailureClassification(
            i.isMultiple(of: 2)
                ? StageError.permanent(.init(rawValue: "verification.invalid_signature"), "signature \(i) does not match")
                : StageError.permanent(.malformedRecord, "record \(i) is not JSON"))
        return DeadLetterHeader.record(
            for: original, topic: dlq, stage: stage.name, failure: failure, attempts: attempts, firstFailure: Date(), lastFailure: Date())
    }
    _ = try await producer.sendAll(records)
    return (stage, producer)
}
