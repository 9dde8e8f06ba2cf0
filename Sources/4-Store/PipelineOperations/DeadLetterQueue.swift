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
    /// Records read (and, replaying, sent and remembered) at a time.
    public var pageSize = 10_000
    /// The group whose committed offsets mark what was replayed.
    public var replayGroup: String { "appstorectl.dlq-replay.\(stage.name)" }

    public init(stage: PipelineStageInfo, client: KafkaClientConfiguration) {
        self.stage = stage
        self.client = client
    }

    /// The group whose committed offsets mark what replays filtered by `code` took.
    public func replayGroup(code: String) -> String { "\(replayGroup).code.\(code)" }

    /// Every dead letter of the stage, in order per partition. A dead letter counts as replayed when
    /// an unfiltered replay or a replay of its code took it. Holds them all: tools that may face a
    /// big queue read it page by page instead (``forEachPage(size:_:)``).
    public func list() async throws -> [DeadLetter] {
        var letters: [DeadLetter] = []
        try await forEachPage { letters += $0 }
        return letters
    }

    /// Reads the whole dead-letter topic in pages of at most `size` records, in order per
    /// partition (``pageSize`` unless `size` is given), handing each page to `body` before the next is read: memory stays bounded
    /// whatever the queue holds, and nothing past a fixed count is left out.
    public func forEachPage(size: Int? = nil, _ body: ([DeadLetter]) async throws -> Void) async throws {
        let size = max(1, size ?? pageSize)
        let offsets = KafkaGroupOffsets(configuration: client)
        let partitions = try await offsets.partitions(of: stage.deadLetterTopic)
        let replayedUpTo = try await offsets.committed(group: replayGroup, partitions: partitions)
        var byCode: [String: [KafkaTopicPartition: Int64?]] = [:]
        var next: [KafkaTopicPartition: Int64?] = Dictionary(uniqueKeysWithValues: partitions.map { ($0, nil) })
        let scanner = KafkaTopicScanner(configuration: client, limit: size)
        while true {
            let messages = try await scanner.scan(next)
            for code in Set(messages.map { $0.headers.string(DeadLetterHeader.errorCode) ?? "unknown" }) where byCode[code] == nil {
                byCode[code] = try await offsets.committed(group: replayGroup(code: code), partitions: partitions)
            }
            let page = messages.map { message in
                let partition = KafkaTopicPartition(topic: message.topic, partition: message.partition)
                let code = message.headers.string(DeadLetterHeader.errorCode) ?? "unknown"
                let all = (replayedUpTo[partition] ?? nil) ?? 0
                let ofCode = (byCode[code]?[partition] ?? nil) ?? 0
                return DeadLetter(message: message, replayed: message.offset < max(all, ofCode))
            }
            .sorted { ($0.message.partition, $0.message.offset) < ($1.message.partition, $1.message.offset) }
            if !page.isEmpty { try await body(page) }
            // A page short of the limit means every partition went quiet: the end.
            guard messages.count >= size else { return }
            for letter in page {
                let partition = KafkaTopicPartition(topic: letter.message.topic, partition: letter.message.partition)
                next[partition] = max((next[partition] ?? nil) ?? 0, letter.message.offset + 1)
            }
        }
    }

    /// The dead letter at `offset` of `partition`, if it exists.
    public func letter(partition: Int32, offset: Int64) async throws -> DeadLetter? {
        try await list().first { $0.message.partition == partition && $0.message.offset == offset }
    }

    /// What one replay did.
    public struct ReplayOutcome: Sendable {
        /// Dead letters sent back to their stage's input (none kept when the replay was asked not
        /// to keep them: see ``replayedCount``).
        public var replayed: [DeadLetter] = []
        /// How many dead letters were (or, planned, would be) sent back.
        public var replayedCount = 0
        /// Dead letters left alone (replayed before, or outside the filter).
        public var skipped = 0
    }

    /// Which dead letters a replay would take, without sending or remembering anything (`--dry-run`).
    /// Dead letters an earlier replay took are left alone unless `includeReplayed`, or the filter
    /// names one record explicitly. `each` sees every page's chosen letters as it is read.
    public func plan(
        filter: DeadLetterFilter = DeadLetterFilter(), includeReplayed: Bool = false, keepLetters: Bool = true,
        each: ([DeadLetter]) async throws -> Void = { _ in }
    ) async throws -> ReplayOutcome {
        var outcome = ReplayOutcome()
        try await forEachPage { page in
            let chosen = Self.chosen(page, filter: filter, includeReplayed: includeReplayed)
            outcome.record(chosen, of: page, keeping: keepLetters)
            try await each(chosen)
        }
        return outcome
    }

    /// Sends the chosen dead letters back to the topic they came from, page by page: each page
    /// waits for the broker's acknowledgement, then is remembered — an unfiltered replay everything
    /// up to there (group ``replayGroup``), a replay filtered by code that code's dead letters up to
    /// there (group ``replayGroup(code:)``) — so running the same replay again sends nothing, and a
    /// replay stopped half way resumes after the pages it finished. A replay of one record
    /// (partition and offset) is explicit and not remembered. `each` sees each page's sent letters.
    public func replay(
        filter: DeadLetterFilter = DeadLetterFilter(), includeReplayed: Bool = false, producer: KafkaProducer, keepLetters: Bool = true,
        each: ([DeadLetter]) async throws -> Void = { _ in }
    ) async throws -> ReplayOutcome {
        var outcome = ReplayOutcome()
        let offsets = KafkaGroupOffsets(configuration: client)
        try await forEachPage { page in
            let chosen = Self.chosen(page, filter: filter, includeReplayed: includeReplayed)
            _ = try await producer.sendAll(chosen.map { $0.replayRecord(defaultTopic: stage.inputTopic) })
            if filter.isEmpty {
                try await offsets.commit(group: replayGroup, offsets: Self.marks(page))
            } else if filter.record == nil {
                for code in filter.codes.sorted() {
                    let ofCode = page.filter { $0.code == code }
                    guard !ofCode.isEmpty else { continue }
                    try await offsets.commit(group: replayGroup(code: code), offsets: Self.marks(ofCode))
                }
            }
            outcome.record(chosen, of: page, keeping: keepLetters)
            try await each(chosen)
        }
        return outcome
    }

    static func chosen(_ page: [DeadLetter], filter: DeadLetterFilter, includeReplayed: Bool) -> [DeadLetter] {
        page.filter { (includeReplayed || filter.record != nil || !$0.replayed) && filter.matches($0) }
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

extension DeadLetterQueue.ReplayOutcome {
    mutating func record(_ chosen: [DeadLetter], of page: [DeadLetter], keeping: Bool) {
        replayedCount += chosen.count
        skipped += page.count - chosen.count
        if keeping { replayed += chosen }
    }
}
