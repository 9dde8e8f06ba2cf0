import Foundation
import KafkaClient
import PipelineRecords

extension DeadLetterHeader {
    /// Builds the dead letter of `message`.
    public static func record(
        for message: KafkaMessage, topic: String, stage stageName: String, failure: FailureClassification,
        attempts attemptCount: Int, firstFailure: Date, lastFailure: Date
    ) -> KafkaOutgoingMessage {
        // Earlier dead-letter headers (a replayed record that failed again) are replaced.
        var headers = message.headers.filter { !all.contains($0.key) }
        headers += [
            KafkaHeader(key: errorCode, string: failure.code),
            KafkaHeader(key: errorMessage, string: String(failure.message.prefix(1000))),
            KafkaHeader(key: stage, string: stageName),
            KafkaHeader(key: sourceTopic, string: message.topic),
            KafkaHeader(key: sourcePartition, string: String(message.partition)),
            KafkaHeader(key: sourceOffset, string: String(message.offset)),
            KafkaHeader(key: attempts, string: String(attemptCount)),
            KafkaHeader(key: firstFailureAt, string: Timestamp.iso8601(firstFailure)),
            KafkaHeader(key: lastFailureAt, string: Timestamp.iso8601(lastFailure)),
        ]
        return KafkaOutgoingMessage(topic: topic, key: message.key, value: message.value, headers: headers)
    }
}
