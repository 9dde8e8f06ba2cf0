import KafkaClient
import LogKeys
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// How a ``StageRunner`` consumes, retries and dead-letters.
public struct StageRunnerConfiguration: Sendable {
    public var deadLetterTopic: String
    public var retry: RetryPolicy
    /// Consecutive records of one partition handed to the stage at once.
    public var maxBatchSize: Int
    /// Records buffered per partition before it is paused.
    public var maxBufferedPerPartition: Int
    /// Records of a partition set aside after a failure of their own, with those of the same key
    /// held behind them, so the rest of the partition moves on; 0: a failing record is retried in
    /// place, holding its partition back.
    public var maxParkedPerPartition: Int
    /// How long a rebalance or shutdown waits for a record in flight before abandoning it (its
    /// offset is then not committed, so the partition's next owner processes it again).
    public var drainTimeout: Duration
    /// A partition retrying for longer than this makes the stage report not ready.
    public var stuckAfter: Duration
    /// A member holding no partition while partitions of its input with lag are held by no member of
    /// its group reports not ready once that has lasted this long: longer than a rebalance takes
    /// (a session timeout and a join), so a rebalance in progress is not mistaken for it.
    public var unownedAfter: Duration
    /// How often the runner reports its lag and checks for unowned partitions.
    public var watchInterval: Duration

    public init(
        deadLetterTopic: String, retry: RetryPolicy = RetryPolicy(), maxBatchSize: Int = 1,
        maxBufferedPerPartition: Int = 500, maxParkedPerPartition: Int = 100, drainTimeout: Duration = .seconds(10),
        stuckAfter: Duration = .seconds(30),
        unownedAfter: Duration = .seconds(90), watchInterval: Duration = .seconds(5)
    ) {
        self.deadLetterTopic = deadLetterTopic
        self.retry = retry
        self.maxBatchSize = max(1, maxBatchSize)
        self.maxBufferedPerPartition = max(2, maxBufferedPerPartition)
        self.maxParkedPerPartition = max(0, maxParkedPerPartition)
        self.drainTimeout = drainTimeout
        self.stuckAfter = stuckAfter
        self.unownedAfter = unownedAfter
        self.watchInterval = watchInterval
    }
}

/// Runs a ``PipelineStage``: consumes its input in a consumer group, processes each partition in
/// order (partitions concurrently), produces the outputs, and stores each input offset only after
/// every output was acknowledged by the broker.
///
/// Put it in the `ServiceGroup` after its producer and ``consumer``: on graceful shutdown it stops
/// fetching and finishes the records in flight; the consumer then commits and leaves the group,
/// and the producer flushes.
///
/// It joins the consumer group only once `startsAfter` returns (an executable passes "the HTTP
/// port is bound"), so a process that fails at start never leaves a member in its group.
public final class StageRunner: Service, Sendable {
    /// The consumer this runner reads from; a service of its own (it commits and closes last).
    public let consumer: KafkaConsumer
    private let context: PartitionWorker.Context
    private let workers = Mutex<[KafkaTopicPartition: PartitionWorker]>([:])
    private let started = Atomic<Bool>(false)
    private let startsAfter: @Sendable () async -> Void
    private let groupID: String
    private let inputTopics: [String]
    private let groupOffsets: KafkaGroupOffsets
    private let unowned = Mutex(UnownedPartitions())
    /// Rings whenever the assignment may have changed; ``reportOwnership()`` answers it.
    private let assignmentChanges: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation) =
        AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    /// What ``reportOwnership()`` works from: the ownership last told to the stage, the input's
    /// partition count per topic, whether the counts are to be read again (after a rebalance), and
    /// the partitions being revoked (the consumer drops them from its assignment only after the
    /// revocation returns).
    private let ownership = Mutex(OwnershipState())
    struct OwnershipState {
        var reported: PartitionOwnership?
        var partitions: [String: Int] = [:]
        var stale = true
        var leaving: Set<KafkaTopicPartition> = []
    }

    public init(
        stage: any PipelineStage, consumerConfiguration: KafkaConsumerConfiguration, producer: KafkaProducer,
        configuration: StageRunnerConfiguration, logger: Logger, startsAfter: @escaping @Sendable () async -> Void = {}
    ) throws {
        var logger = logger
        logger[metadataKey: LogKey.stage] = "\(stage.name)"
        let relay = RebalanceRelay()
        consumer = try KafkaConsumer(configuration: consumerConfiguration, logger: logger, rebalanceListener: relay)
        context = PartitionWorker.Context(
            stage: stage, consumer: consumer, producer: producer, configuration: configuration,
            metrics: StageMetrics(stage: stage.name), progress: StageProgress(), logger: logger)
        self.startsAfter = startsAfter
        groupOffsets = KafkaGroupOffsets(configuration: consumerConfiguration.client)
        groupID = consumerConfiguration.groupID
        inputTopics = consumerConfiguration.topics
        relay.runner.withLock { $0.value = self }
    }

    public var stageName: String { context.stage.name }

    /// Ready once consuming, while no partition has been stuck retrying for too long, and while it
    /// is not a member holding nothing beside input that nobody holds (``StageRunnerConfiguration/unownedAfter``).
    public var isReady: Bool {
        guard started.load(ordering: .relaxed) else { return false }
        let stuck = workers.withLock { $0.values.contains { ($0.retryingFor ?? .zero) > context.configuration.stuckAfter } }
        let orphaned = unowned.withLock { $0.lasting(longerThan: context.configuration.unownedAfter) }
        return !stuck && !orphaned
    }

    public func run() async throws {
        await startsAfter()
        guard !Task.isCancelled else { return }
        try consumer.subscribe()
        started.store(true, ordering: .relaxed)
        context.logger.info("stage started")
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.watch() }
            group.addTask { await self.reportOwnership() }
            await cancelWhenGracefulShutdown {
                for await message in self.consumer.messages {
                    self.context.metrics.consumed.increment()
                    self.worker(for: message.topicPartition).enqueue(message)
                }
            }
            group.cancelAll()
        }
        // Stop fetching (done), finish what is in flight, leave the rest uncommitted.
        let all = workers.withLock { w in
            defer { w.removeAll() }
            return Array(w.values)
        }
        await withTaskGroup(of: Void.self) { group in
            for w in all { group.addTask { await w.stop(timeout: self.context.configuration.drainTimeout) } }
        }
        started.store(false, ordering: .relaxed)
        context.logger.info("stage stopped")
    }

    private func worker(for partition: KafkaTopicPartition) -> PartitionWorker {
        workers.withLock { w in
            if let existing = w[partition] { return existing }
            let created = PartitionWorker(partition: partition, context: context)
            w[partition] = created
            return created
        }
    }

    /// Called on the consumer's polling thread before partitions move to another member.
    fileprivate func revoke(_ partitions: [KafkaTopicPartition]) {
        let leaving = workers.withLock { w in partitions.compactMap { w.removeValue(forKey: $0) } }
        for w in leaving { w.stopBlocking(timeout: context.configuration.drainTimeout) }
        ownership.withLock {
            $0.leaving.formUnion(partitions)
            $0.stale = true
        }
        assignmentChanges.continuation.yield()
    }

    /// Called on the consumer's polling thread after partitions were assigned.
    fileprivate func assigned(_ partitions: [KafkaTopicPartition]) {
        ownership.withLock {
            $0.leaving.subtract(partitions)
            $0.stale = true
        }
        assignmentChanges.continuation.yield()
    }

    /// Tells the stage its part of the input (``PipelineStage/ownershipChanged(_:)``) after every
    /// change of assignment, and on each watch round in case one was missed. The partition counts
    /// come from the cluster's metadata, read again after each rebalance (partitions may have been
    /// added); until they are known nothing is reported.
    private func reportOwnership() async {
        for await _ in assignmentChanges.stream {
            let refresh = ownership.withLock { state in
                defer { state.stale = false }
                return state.stale
            }
            var total: Int? = 0
            for topic in inputTopics {
                if refresh || ownership.withLock({ $0.partitions[topic] == nil }), let count = try? await groupOffsets.partitions(of: topic).count {
                    ownership.withLock { $0.partitions[topic] = count }
                }
                total = ownership.withLock { $0.partitions[topic] }.flatMap { known in total.map { $0 + known } }
            }
            guard let total else { continue }
            let topics = Set(inputTopics)
            let held = consumer.assignment.subtracting(ownership.withLock { $0.leaving })
            let now = PartitionOwnership(owned: held.filter { topics.contains($0.topic) }.count, total: total)
            let changed = ownership.withLock { state in
                defer { state.reported = now }
                return state.reported != now
            }
            guard changed else { continue }
            context.logger.info("owns \(now) partitions of its input", metadata: [LogKey.partitions: "\(now)"])
            context.stage.ownershipChanged(now)
        }
    }

    /// Every ``StageRunnerConfiguration/watchInterval``: the lag of the partitions held, the
    /// partitions retrying, and, while this member holds nothing, whether input with lag is held by
    /// no member (seen with the local broker after a member failed at start: the group kept members
    /// and assigned none of them anything, and records waited unseen).
    private func watch() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: context.configuration.watchInterval)
            for (tp, lag) in consumer.lag() {
                context.metrics.lag(topic: tp.topic, partition: tp.partition, value: lag)
            }
            context.metrics.retrying(partitions: workers.withLock { $0.values.filter { $0.retryingFor != nil }.count })
            await checkUnowned()
            assignmentChanges.continuation.yield()
        }
    }

    private func checkUnowned() async {
        var waiting = KafkaGroupOffsets.Waiting(lag: [:], committed: [:], held: [], members: 0)
        if consumer.assignment.isEmpty {
            for topic in inputTopics {
                // Could not be asked: nothing to report this time.
                guard let found = try? await groupOffsets.waiting(group: groupID, topic: topic) else { continue }
                waiting.lag.merge(found.lag) { a, _ in a }
                waiting.committed.merge(found.committed) { a, _ in a }
                // A group listing no member is still forming (this member is joining): who holds
                // what is not settled, so only offsets that stop moving count.
                let held = found.members == 0 ? nil : found.held
                waiting.held = held.flatMap { held in waiting.held.map { $0.union(held) } }
            }
        }
        let began = unowned.withLock { $0.update(waiting, now: .now) }
        let partitions = unowned.withLock { $0.partitions }
        context.metrics.unowned(partitions: partitions.count)
        if began {
            context.logger.warning(
                "this member holds no partition while partitions with lag are held by no member of its group",
                metadata: [
                    LogKey.group: "\(groupID)",
                    LogKey.partitions: "\(partitions.sorted { $0.key.description < $1.key.description }.map { "\($0.key): lag \($0.value)" })",
                ])
        }
    }
}

/// The partitions with lag that nobody takes while this member holds none: held by no member when
/// the broker says who holds what, else those whose committed offset has not moved between checks
/// (a partition some other member holds moves as it is consumed).
struct UnownedPartitions {
    /// Each unowned partition's lag, as of the last check.
    private(set) var partitions: [KafkaTopicPartition: Int64] = [:]
    /// Per partition with lag not known to be held: its committed offset and since when it is so.
    private var watched: [KafkaTopicPartition: (committed: Int64?, since: ContinuousClock.Instant)] = [:]

    /// Records a check; true when it turns up unowned partitions after a check that found none.
    mutating func update(_ waiting: KafkaGroupOffsets.Waiting, now: ContinuousClock.Instant) -> Bool {
        let before = partitions.isEmpty
        var next: [KafkaTopicPartition: (committed: Int64?, since: ContinuousClock.Instant)] = [:]
        var found: [KafkaTopicPartition: Int64] = [:]
        for (partition, lag) in waiting.lag where lag > 0 {
            let committed = waiting.committed[partition] ?? nil
            if let held = waiting.held {
                guard !held.contains(partition) else { continue }
                next[partition] = (committed, watched[partition]?.since ?? now)
                found[partition] = lag
            } else if let seen = watched[partition], seen.committed == committed {
                next[partition] = seen
                found[partition] = lag
            } else {
                next[partition] = (committed, now)
            }
        }
        watched = next
        partitions = found
        return before && !found.isEmpty
    }

    /// True when a partition has been unowned for longer than `limit`.
    func lasting(longerThan limit: Duration, now: ContinuousClock.Instant = .now) -> Bool {
        partitions.keys.contains { partition in watched[partition].map { now - $0.since > limit } ?? false }
    }
}

/// Forwards the consumer's rebalance calls to the runner created after it.
private final class RebalanceRelay: KafkaRebalanceListener {
    struct Weak { weak var value: StageRunner? }
    let runner = Mutex(Weak())
    func partitionsWillBeRevoked(_ partitions: [KafkaTopicPartition]) {
        runner.withLock { $0.value }?.revoke(partitions)
    }
    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) {
        runner.withLock { $0.value }?.assigned(partitions)
    }
}
