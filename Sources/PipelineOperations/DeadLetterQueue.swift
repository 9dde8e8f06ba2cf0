import Foundation
import KafkaClient
import StageRuntime

/// One dead-lettered record with the reasons its stage wrote in the `dlq-*` headers.
public struct DeadLetter: Sendable {
    /// The record as it sits in the dead-letter topic.
    public var message: KafkaMessage
    /// True when an earlier `dlq replay` already re-injected it.
    public var replayed: Bool

    public var code: String { message.headers.string(DeadLetterHeader.errorCode) ?? "unknown" }
    public var reason: String { message.headers.string(DeadLetterHeader.errorMessage) ?? "" }
    public var attempts: Int { message.headers.string(DeadLetterHeader.attempts).flatMap(Int.init) ?? 0 }
    public var lastFailureAt: String { message.headers.string(DeadLetterHeader.lastFailureAt) ?? "" }
    /// The topic the record was consumed from, where a replay sends it back.
    public var sourceTopic: String? { message.headers.string(DeadLetterHeader.sourceTopic) }
    /// `topic[partition]@offset` of the original record.
    public var source: String {
        let topic = sourceTopic ?? "?"
        let partition = message.headers.string(DeadLetterHeader.sourcePartition) ?? "?"
        let offset = message.headers.string(DeadLetterHeader.sourceOffset) ?? "?"
        return "\(topic)[\(partition)]@\(offset)"
    }
    /// The record as it was before it failed: key, body and headers without the `dlq-*` ones, plus
    /// `dlq-replayed-from` naming this dead letter.
    public func replayRecord(defaultTopic: String) -> KafkaOutgoingMessage {
        var headers = message.headers.filter { !$0.key.hasPrefix("dlq-") }
        headers.append(KafkaHeader(key: "dlq-replayed-from", string: "\(message.topic)[\(message.partition)]@\(message.offset)"))
        return KafkaOutgoingMessage(
            topic: sourceTopic ?? defaultTopic, key: message.key, value: message.value, headers: headers)
    }
}

/// Which dead letters a replay takes.
public struct DeadLetterFilter: Sendable, Hashable {
    /// Only these error codes (all when empty).
    public var codes: Set<String>
    /// Only this one record, `(partition, offset)` in the dead-letter topic.
    public var record: (partition: Int32, offset: Int64)?

    public init(codes: Set<String> = [], record: (partition: Int32, offset: Int64)? = nil) {
        self.codes = codes
        self.record = record
    }

    public var isEmpty: Bool { codes.isEmpty && record == nil }

    func matches(_ letter: DeadLetter) -> Bool {
        if !codes.isEmpty, !codes.contains(letter.code) { return false }
        if let record, letter.message.partition != record.partition || letter.message.offset != record.offset { return false }
        return true
    }

    public static func == (a: DeadLetterFilter, b: DeadLetterFilter) -> Bool {
        a.codes == b.codes && a.record?.partition == b.record?.partition && a.record?.offset == b.record?.offset
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(codes)
        hasher.combine(record?.partition)
        hasher.combine(record?.offset)
    }
}

/// A stage's dead-letter topic as operators work with it: list and show what failed and why, and
/// re-inject records into the stage once the cause is fixed.
///
/// What was replayed is remembered as the committed offsets of the group
/// `appstorectl.dlq-replay.<stage>`, so a plain `replay` takes only what no replay took before; the
/// dead-letter topic itself is never changed.
public struct DeadLetterQueue: Sendable {
    public let stage: PipelineStageInfo
    public let client: KafkaClientConfiguration
    /// The group whose committed offsets mark what was replayed.
    public var replayGroup: String { "appstorectl.dlq-replay.\(stage.name)" }

    public init(stage: PipelineStageInfo, client: KafkaClientConfiguration) {
        self.stage = stage
        self.client = client
    }

    /// Every dead letter of the stage, in order per partition.
    public func list() async throws -> [DeadLetter] {
        let offsets = KafkaGroupOffsets(configuration: client)
        let partitions = try await offsets.partitions(of: stage.deadLetterTopic)
        let replayedUpTo = try await offsets.committed(group: replayGroup, partitions: partitions)
        let messages = try await KafkaTopicScanner(configuration: client).scan(
            Dictionary(uniqueKeysWithValues: partitions.map { ($0, nil) }))
        return messages.map { message in
            let mark = (replayedUpTo[KafkaTopicPartition(topic: message.topic, partition: message.partition)] ?? nil) ?? 0
            return DeadLetter(message: message, replayed: message.offset < mark)
        }
        .sorted { ($0.message.partition, $0.message.offset) < ($1.message.partition, $1.message.offset) }
    }

    /// The dead letter at `offset` of `partition`, if it exists.
    public func letter(partition: Int32, offset: Int64) async throws -> DeadLetter? {
        try await list().first { $0.message.partition == partition && $0.message.offset == offset }
    }

    /// What one replay did.
    public struct ReplayOutcome: Sendable {
        /// Dead letters sent back to their stage's input.
        public var replayed: [DeadLetter]
        /// Dead letters left alone (replayed before, or outside the filter).
        public var skipped: Int
    }

    /// Sends the chosen dead letters back to the topic they came from and waits for the broker's
    /// acknowledgement. Without a filter and without `includeReplayed`, it takes only what was never
    /// replayed and then records that everything up to here is done.
    public func replay(
        filter: DeadLetterFilter = DeadLetterFilter(), includeReplayed: Bool = false, producer: KafkaProducer
    ) async throws -> ReplayOutcome {
        let letters = try await list()
        let chosen = letters.filter { (includeReplayed || !filter.isEmpty || !$0.replayed) && filter.matches($0) }
        _ = try await producer.sendAll(chosen.map { $0.replayRecord(defaultTopic: stage.inputTopic) })
        if filter.isEmpty, !letters.isEmpty {
            var next: [KafkaTopicPartition: Int64] = [:]
            for letter in letters {
                let partition = KafkaTopicPartition(topic: letter.message.topic, partition: letter.message.partition)
                next[partition] = max(next[partition] ?? 0, letter.message.offset + 1)
            }
            try await KafkaGroupOffsets(configuration: client).commit(group: replayGroup, offsets: next)
        }
        return ReplayOutcome(replayed: chosen, skipped: letters.count - chosen.count)
    }
}
