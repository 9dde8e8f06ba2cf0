import Foundation
import KafkaClient
import PipelineRecords

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
        var headers = message.headers.filter { !$0.key.hasPrefix(DeadLetterHeader.prefix) }
        headers.append(KafkaHeader(key: DeadLetterHeader.replayedFrom, string: "\(message.topic)[\(message.partition)]@\(message.offset)"))
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

    /// The group whose committed offsets mark what replays filtered by `code` took.
    public func replayGroup(code: String) -> String { "\(replayGroup).code.\(code)" }

    /// Every dead letter of the stage, in order per partition. A dead letter counts as replayed when
    /// an unfiltered replay or a replay of its code took it.
    public func list() async throws -> [DeadLetter] {
        let offsets = KafkaGroupOffsets(configuration: client)
        let partitions = try await offsets.partitions(of: stage.deadLetterTopic)
        let replayedUpTo = try await offsets.committed(group: replayGroup, partitions: partitions)
        let messages = try await KafkaTopicScanner(configuration: client).scan(
            Dictionary(uniqueKeysWithValues: partitions.map { ($0, nil) }))
        var byCode: [String: [KafkaTopicPartition: Int64?]] = [:]
        for code in Set(messages.map { $0.headers.string(DeadLetterHeader.errorCode) ?? "unknown" }) {
            byCode[code] = try await offsets.committed(group: replayGroup(code: code), partitions: partitions)
        }
        return messages.map { message in
            let partition = KafkaTopicPartition(topic: message.topic, partition: message.partition)
            let code = message.headers.string(DeadLetterHeader.errorCode) ?? "unknown"
            let all = (replayedUpTo[partition] ?? nil) ?? 0
            let ofCode = (byCode[code]?[partition] ?? nil) ?? 0
            return DeadLetter(message: message, replayed: message.offset < max(all, ofCode))
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
        /// Every dead letter of the stage as listed before the replay.
        public var letters: [DeadLetter] = []
    }

    /// Which dead letters a replay would take, without sending or remembering anything (`--dry-run`).
    /// Dead letters an earlier replay took are left alone unless `includeReplayed`, or the filter
    /// names one record explicitly.
    public func plan(filter: DeadLetterFilter = DeadLetterFilter(), includeReplayed: Bool = false) async throws -> ReplayOutcome {
        let letters = try await list()
        let chosen = letters.filter { (includeReplayed || filter.record != nil || !$0.replayed) && filter.matches($0) }
        return ReplayOutcome(replayed: chosen, skipped: letters.count - chosen.count, letters: letters)
    }

    /// Sends the chosen dead letters back to the topic they came from and waits for the broker's
    /// acknowledgement, then remembers what was taken: an unfiltered replay everything up to here
    /// (group ``replayGroup``), a replay filtered by code that code's dead letters up to here
    /// (group ``replayGroup(code:)``), so running the same replay again sends nothing. A replay of
    /// one record (partition and offset) is explicit and not remembered.
    public func replay(
        filter: DeadLetterFilter = DeadLetterFilter(), includeReplayed: Bool = false, producer: KafkaProducer
    ) async throws -> ReplayOutcome {
        let outcome = try await plan(filter: filter, includeReplayed: includeReplayed)
        _ = try await producer.sendAll(outcome.replayed.map { $0.replayRecord(defaultTopic: stage.inputTopic) })
        let offsets = KafkaGroupOffsets(configuration: client)
        if filter.isEmpty, !outcome.letters.isEmpty {
            try await offsets.commit(group: replayGroup, offsets: Self.marks(outcome.letters))
        } else if filter.record == nil {
            for code in filter.codes.sorted() {
                let ofCode = outcome.letters.filter { $0.code == code }
                guard !ofCode.isEmpty else { continue }
                try await offsets.commit(group: replayGroup(code: code), offsets: Self.marks(ofCode))
            }
        }
        return outcome
    }

    /// Per partition, one past the highest offset of `letters`.
    static func marks(_ letters: [DeadLetter]) -> [KafkaTopicPartition: Int64] {
        var next: [KafkaTopicPartition: Int64] = [:]
        for letter in letters {
            let partition = KafkaTopicPartition(topic: letter.message.topic, partition: letter.message.partition)
            next[partition] = max(next[partition] ?? 0, letter.message.offset + 1)
        }
        return next
    }
}
