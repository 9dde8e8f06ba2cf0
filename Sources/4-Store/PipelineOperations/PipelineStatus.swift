import Foundation
import KafkaClient
import PipelineRecords

/// What the broker says about one consuming stage: who is in its group, how far behind it is per
/// input partition, when its input last received a record, and its dead letters.
public struct StageStatus: Sendable, Encodable {
    public struct Partition: Sendable, Hashable, Encodable {
        public var partition: Int32
        /// The group's committed offset (the next record it reads); `nil`: none committed yet, the
        /// stage starts at the earliest record.
        public var committed: Int64?
        /// The first offset the partition still holds.
        public var earliest: Int64
        /// One past the last record: the high watermark, raised to what a read from it found (some
        /// brokers, Tansu among them, report the end of the last batch late).
        public var end: Int64
        /// Records written and not yet committed by the group; `nil` when it cannot be told.
        public var lag: Int64?
        /// When the partition's last record was written (its broker timestamp).
        public var lastRecordAt: Date?

        public init(partition: Int32, committed: Int64?, earliest: Int64, end: Int64, lag: Int64?, lastRecordAt: Date? = nil) {
            self.partition = partition
            self.committed = committed
            self.earliest = earliest
            self.end = end
            self.lag = lag
            self.lastRecordAt = lastRecordAt
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(partition, forKey: .partition)
            try c.encodeAlways(committed, forKey: .committed)
            try c.encode(earliest, forKey: .earliest)
            try c.encode(end, forKey: .end)
            try c.encodeAlways(lag, forKey: .lag)
            try c.encodeAlways(lastRecordAt, forKey: .lastRecordAt)
        }
        enum CodingKeys: String, CodingKey { case partition, committed, earliest, end, lag, lastRecordAt }
    }

    public var stage: String
    public var group: String
    public var inputTopic: String
    public var deadLetterTopic: String
    /// The group's state as the coordinator names it (`Stable`, `Empty`, …); `nil` when the broker
    /// does not know the group or could not be asked.
    public var groupState: String?
    /// The joined members; `nil` when membership could not be read.
    public var members: [KafkaGroupOffsets.Member]?
    public var partitions: [Partition] = []
    /// False when the input's partitions could not be read: lag and last record time are unknown.
    public var partitionsRead = true
    public var deadLetters: [DeadLetterCount]?
    /// What could not be read (the rest of the status stands).
    public var errors: [String] = []

    /// The sum of the partitions' lag; `nil` when any is unknown.
    public var lag: Int64? {
        guard partitionsRead else { return nil }
        return partitions.reduce(Int64(0) as Int64?) { total, partition in
            guard let total, let lag = partition.lag else { return nil }
            return total + lag
        }
    }
    /// At least this many records wait (the known part of the lag).
    public var knownLag: Int64 { partitions.reduce(0) { $0 + ($1.lag ?? 0) } }
    /// Input partitions with lag that no member holds although the group has members and calls
    /// itself stable: records nobody will read until the group rebalances (seen with the local
    /// broker after a member failed at start). Empty when the members' assignments are unknown.
    public var unownedPartitions: [Partition] {
        guard let members, !members.isEmpty, groupState == "Stable", let held = KafkaGroupOffsets.held(by: members) else { return [] }
        return partitions.filter { ($0.lag ?? 0) > 0 && !held.contains(KafkaTopicPartition(topic: inputTopic, partition: $0.partition)) }
    }
    /// The newest record of the input topic.
    public var lastRecordAt: Date? { partitions.compactMap(\.lastRecordAt).max() }
    public var deadLettersNotReplayed: Int? { deadLetters.map { $0.reduce(0) { $0 + $1.notReplayed } } }

    public init(stage: PipelineStageInfo) {
        self.stage = stage.name
        group = stage.groupID
        inputTopic = stage.inputTopic
        deadLetterTopic = stage.deadLetterTopic
    }

    enum CodingKeys: String, CodingKey {
        case stage, group, inputTopic, deadLetterTopic, groupState, memberCount, members, lag, lastRecordAt, partitions, unownedPartitions,
            deadLetters, deadLettersNotReplayed, errors
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(stage, forKey: .stage)
        try c.encode(group, forKey: .group)
        try c.encode(inputTopic, forKey: .inputTopic)
        try c.encode(deadLetterTopic, forKey: .deadLetterTopic)
        try c.encodeAlways(groupState, forKey: .groupState)
        try c.encodeAlways(members?.count, forKey: .memberCount)
        try c.encodeAlways(members, forKey: .members)
        try c.encodeAlways(lag, forKey: .lag)
        try c.encodeAlways(lastRecordAt, forKey: .lastRecordAt)
        try c.encode(partitions, forKey: .partitions)
        try c.encode(unownedPartitions.map(\.partition), forKey: .unownedPartitions)
        try c.encodeAlways(deadLetters, forKey: .deadLetters)
        try c.encodeAlways(deadLettersNotReplayed, forKey: .deadLettersNotReplayed)
        try c.encode(errors, forKey: .errors)
    }
}

/// Reads ``StageStatus`` for stages from the broker, stages concurrently. Nothing is changed: no
/// group is joined, no offset committed.
public struct PipelineStatusReader: Sendable {
    public let client: KafkaClientConfiguration
    /// How long a read of a partition's tail waits for more records before it counts as the end.
    public var idle: Duration

    public init(client: KafkaClientConfiguration, idle: Duration = .milliseconds(500)) {
        self.client = client
        self.idle = idle
    }

    public func read(_ stages: [PipelineStageInfo]) async -> [StageStatus] {
        await withTaskGroup(of: (Int, StageStatus).self) { group in
            for (index, stage) in stages.enumerated() {
                group.addTask { (index, await read(stage)) }
            }
            var result: [(Int, StageStatus)] = []
            for await entry in group { result.append(entry) }
            return result.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// The stage's dead letters counted by code, page by page (nothing of a big queue held).
    static func deadLetterCounts(_ stage: PipelineStageInfo, client: KafkaClientConfiguration) async throws -> [DeadLetterCount] {
        var counts: [DeadLetterCount] = []
        try await DeadLetterQueue(stage: stage, client: client).forEachPage { counts = DeadLetterCount.adding($0, to: counts) }
        return counts
    }

    public func read(_ stage: PipelineStageInfo) async -> StageStatus {
        var status = StageStatus(stage: stage)
        let offsets = KafkaGroupOffsets(configuration: client)
        async let letters = Self.deadLetterCounts(stage, client: client)
        do {
            let description = try await offsets.describeGroup(stage.groupID)
            status.groupState = description?.state
            status.members = description?.members ?? []
        } catch {
            status.errors.append("group \(stage.groupID): \(error)")
        }
        do {
            status.partitions = try await partitions(stage, offsets: offsets)
        } catch {
            status.partitionsRead = false
            status.errors.append("lag of \(stage.inputTopic): \(error)")
        }
        do {
            status.deadLetters = try await letters
        } catch {
            status.errors.append("dead letters in \(stage.deadLetterTopic): \(error)")
        }
        return status
    }

    /// Committed offset, watermarks and the tail of every input partition. The tail is read from
    /// the high watermark's last record onwards: its timestamps give the last record time, and the
    /// last offset read corrects a watermark the broker reported too low.
    func partitions(_ stage: PipelineStageInfo, offsets: KafkaGroupOffsets) async throws -> [StageStatus.Partition] {
        let partitions = try await offsets.partitions(of: stage.inputTopic)
        let committed = try await offsets.committed(group: stage.groupID, partitions: partitions)
        let marks = try await offsets.watermarks(partitions)
        var tails: [KafkaTopicPartition: Int64?] = [:]
        for partition in partitions {
            if let mark = marks[partition], mark.high > mark.low { tails[partition] = mark.high - 1 }
        }
        var lastOffset: [KafkaTopicPartition: Int64] = [:]
        var lastTime: [KafkaTopicPartition: Date] = [:]
        if !tails.isEmpty {
            do {
                for message in try await KafkaTopicScanner(configuration: client, idle: idle, limit: 50_000).scan(tails) {
                    let partition = KafkaTopicPartition(topic: message.topic, partition: message.partition)
                    lastOffset[partition] = max(lastOffset[partition] ?? -1, message.offset)
                    if let time = message.timestamp { lastTime[partition] = max(lastTime[partition] ?? time, time) }
                }
            } catch {
                // Without the tail the watermarks stand; a lag they make negative is reported unknown.
            }
        }
        return partitions.compactMap { partition in
            guard let mark = marks[partition] else { return nil }
            let end = max(mark.high, (lastOffset[partition] ?? -1) + 1)
            let position = (committed[partition] ?? nil)
            var lag: Int64? = end - (position ?? mark.low)
            // A committed offset past the end means the end is not known: say so rather than guess.
            if let current = lag, current < 0 { lag = nil }
            return StageStatus.Partition(
                partition: partition.partition, committed: position, earliest: mark.low, end: end, lag: lag,
                lastRecordAt: lastTime[partition])
        }
    }
}
