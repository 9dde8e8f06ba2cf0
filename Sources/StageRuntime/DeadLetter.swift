import Foundation
import KafkaClient

/// The headers that say why a record was dead-lettered (see schemas/headers.md). The dead letter
/// keeps the original key, body and headers, so it can be replayed into its stage unchanged.
public enum DeadLetterHeader {
    public static let errorCode = "dlq-error-code"
    public static let errorMessage = "dlq-error-message"
    public static let stage = "dlq-stage"
    public static let sourceTopic = "dlq-source-topic"
    public static let sourcePartition = "dlq-source-partition"
    public static let sourceOffset = "dlq-source-offset"
    public static let attempts = "dlq-attempts"
    public static let firstFailureAt = "dlq-first-failure-at"
    public static let lastFailureAt = "dlq-last-failure-at"

    static let all: Set<String> = [
        errorCode, errorMessage, stage, sourceTopic, sourcePartition, sourceOffset, attempts, firstFailureAt, lastFailureAt,
    ]

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

/// ISO 8601 timestamps with milliseconds, UTC, as every header in the pipeline writes them.
public enum Timestamp {
    public static func iso8601(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
