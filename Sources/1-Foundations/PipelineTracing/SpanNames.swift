/// Span attribute names after OpenTelemetry's semantic conventions (messaging, database, HTTP), in
/// one place so every stage names the same thing the same way.
public enum SpanAttributeName {
    public static let messagingSystem = "messaging.system"
    public static let messagingOperationType = "messaging.operation.type"
    public static let messagingOperationName = "messaging.operation.name"
    public static let messagingDestination = "messaging.destination.name"
    public static let messagingPartition = "messaging.destination.partition.id"
    public static let messagingConsumerGroup = "messaging.consumer.group.name"
    public static let messagingBatchCount = "messaging.batch.message_count"
    public static let kafkaOffset = "messaging.kafka.offset"
    public static let kafkaKey = "messaging.kafka.message.key"
    public static let dbSystem = "db.system.name"
    public static let dbOperation = "db.operation.name"
    public static let errorType = "error.type"
    /// The project's own: how many times a record was tried, and the code it was dead-lettered with.
    public static let attempts = "appstore.attempts"
    public static let deadLetterCode = "appstore.dead_letter.code"
    /// How many records a record's handling produced for the next stage (0: its journey ended there).
    public static let outputs = "appstore.outputs"
    /// Set on a record's span when it was set aside, to be tried again later while the rest of its
    /// partition moved on (its next attempt has a span of its own, in the same trace).
    public static let parked = "appstore.parked"
}

/// Span names after OpenTelemetry's conventions: `{operation} {destination}` for messaging.
public enum SpanName {
    /// A stage's handling of one record of `topic`.
    public static func process(_ topic: String) -> String { "process \(topic)" }
    /// Producing a record to `topic` (grant's change events).
    public static func send(_ topic: String) -> String { "send \(topic)" }
}
