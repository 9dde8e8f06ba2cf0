import Foundation

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
    /// On a record `appstorectl dlq replay` sent back: `<dlq topic>[<partition>]@<offset>` of the
    /// dead letter it came from. Kept when it fails again.
    public static let replayedFrom = "dlq-replayed-from"

    /// What every dead-letter header's name starts with (also `dlq-replayed-from`, which a
    /// replayed record carries): a stage drops them all from its output.
    public static let prefix = "dlq-"

    /// The headers a dead letter gets; a record that fails again has them replaced.
    public static let all: Set<String> = [
        errorCode, errorMessage, stage, sourceTopic, sourcePartition, sourceOffset, attempts, firstFailureAt, lastFailureAt,
    ]
}
