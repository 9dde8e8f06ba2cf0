import Foundation
import KafkaClient
import PipelineRecords

/// Where a replay starts.
public enum ReplayStart: Sendable, Hashable {
    /// The first record whose timestamp is at or after the time.
    case time(Date)
    /// The first record each partition still has.
    case earliest
    /// This offset (the same number on every chosen partition).
    case offset(Int64)
}

/// What a replay will do: per partition, where the stage's group stands and where it will restart.
public struct ReplayPlan: Sendable {
    public struct Entry: Sendable, Hashable {
        public var partition: KafkaTopicPartition
        /// The group's committed offset now (`nil`: none yet).
        public var current: Int64?
        /// The offset the stage will read next after the replay.
        public var target: Int64
    }

    public var stage: PipelineStageInfo
    public var group: String
    public var entries: [Entry]

    /// How many records the stage will process again (negative entries, a skip forward, count 0).
    public var recordsToReprocess: Int64 {
        entries.reduce(0) { total, entry in total + max(0, (entry.current ?? entry.target) - entry.target) }
    }
}

/// Resets a stopped stage's consumer group so the stage re-runs its input from a point: the
/// recovery path of the design ("any stage can be re-run from a point in time").
///
/// Replaying is safe because every stage is idempotent downstream (grant above all), but the
/// group must have no running member: Kafka refuses offsets committed from outside an active group.
public struct StageReplay: Sendable {
    public let offsets: KafkaGroupOffsets

    public init(offsets: KafkaGroupOffsets) {
        self.offsets = offsets
    }

    /// Works out the new offsets without changing anything.
    /// - Parameters:
    ///   - group: the stage's consumer group (its default unless the deployment overrides it).
    ///   - partitions: the input partitions to reset; all when `nil`.
    public func plan(
        stage: PipelineStageInfo, group: String? = nil, from start: ReplayStart, partitions: [Int32]? = nil
    ) async throws -> ReplayPlan {
        let group = group ?? stage.groupID
        let all = try await offsets.partitions(of: stage.inputTopic)
        var chosen = all
        if let partitions {
            let known = Set(all.map(\.partition))
            if let missing = partitions.first(where: { !known.contains($0) }) {
                throw OperationsError(
                    .noSuchPartition, "\(stage.inputTopic) has partitions 0…\(all.count - 1), not \(missing)")
            }
            chosen = all.filter { partitions.contains($0.partition) }
        }
        let committed = try await offsets.committed(group: group, partitions: chosen)
        let marks = try await offsets.watermarks(chosen)
        var byTime: [KafkaTopicPartition: Int64?] = [:]
        if case .time(let date) = start { byTime = try await offsets.offsets(at: date, for: chosen) }

        var entries: [ReplayPlan.Entry] = []
        for partition in chosen {
            guard let mark = marks[partition] else { continue }
            let target: Int64
            switch start {
            case .earliest:
                target = mark.low
            case .offset(let offset):
                guard offset >= mark.low, offset <= mark.high else {
                    throw OperationsError(
                        .offsetOutOfRange,
                        "\(partition) holds offsets \(mark.low)…\(mark.high); \(offset) is outside")
                }
                target = offset
            case .time:
                // No record that recent: the group resumes at the end of what the partition holds.
                target = (byTime[partition] ?? nil) ?? mark.high
            }
            entries.append(.init(partition: partition, current: committed[partition] ?? nil, target: target))
        }
        return ReplayPlan(stage: stage, group: group, entries: entries)
    }

    /// Commits the plan's offsets for its group, after checking that no member is running.
    public func apply(_ plan: ReplayPlan) async throws {
        if let state = try? await offsets.groupState(plan.group), !state.isInactive {
            throw OperationsError(
                .groupActive,
                "group \(plan.group) has \(state.members) running member(s) (state \(state.state)); stop every \(plan.stage.name) instance first, then replay"
            )
        }
        let targets = Dictionary(uniqueKeysWithValues: plan.entries.map { ($0.partition, $0.target) })
        try await offsets.commit(group: plan.group, offsets: targets)
    }
}
