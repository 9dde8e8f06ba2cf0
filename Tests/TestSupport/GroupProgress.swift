import KafkaClient
import Synchronization

/// Samples a consumer group's lag per partition while a test waits for records, so that a wait that
/// ends short says which it was: a partition that stalled (its lag stopped falling while records
/// waited) or a slow machine (every lag still falling).
public final class GroupProgress: Sendable {
    public struct Sample: Sendable {
        public var at: ContinuousClock.Instant
        /// Records of each partition not yet committed by the group.
        public var lag: [Int32: Int64]
    }

    public let group: String
    public let topic: String
    private let samples = Mutex<[Sample]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Starts sampling every `interval` until ``stop()``.
    public init(group: String, topic: String, interval: Duration = .seconds(5)) {
        self.group = group
        self.topic = topic
        let offsets = KafkaGroupOffsets(configuration: TestServices.clientConfiguration("tests-progress"))
        task.withLock {
            $0 = Task { [self] in
                while !Task.isCancelled {
                    if let partitions = try? await offsets.partitions(of: topic),
                        let waiting = try? await offsets.waiting(group: group, topic: topic)
                    {
                        // `waiting` lists the partitions with lag; the others have none.
                        let lag = Dictionary(uniqueKeysWithValues: partitions.map { ($0.partition, waiting.lag[$0] ?? 0) })
                        samples.withLock { $0.append(Sample(at: .now, lag: lag)) }
                    }
                    try? await Task.sleep(for: interval)
                }
            }
        }
    }

    public func stop() {
        task.withLock { $0?.cancel() }
    }

    /// Partitions whose lag was above zero and did not fall over the last `window` of samples.
    public func stalled(for window: Duration) -> [Int32] {
        let all = samples.withLock { $0 }
        guard let last = all.last, let first = all.last(where: { last.at - $0.at >= window }) else { return [] }
        return last.lag.filter { partition, lag in lag > 0 && (first.lag[partition] ?? 0) <= lag }.keys.sorted()
    }

    /// Each partition's lag over the samples (seconds since the first), for a failure message.
    public var report: String {
        let all = samples.withLock { $0 }
        guard let start = all.first?.at else { return "group \(group): no sample of its lag could be read" }
        let partitions = Set(all.flatMap(\.lag.keys)).sorted()
        let rows = partitions.map { p in
            "p\(p): " + all.map { "\(Int(($0.at - start).components.seconds))s=\($0.lag[p].map(String.init) ?? "?")" }.joined(separator: " ")
        }
        return "group \(group) lag on \(topic): " + rows.joined(separator: "; ")
    }
}
