import EnvironmentSettings
import KafkaClient
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
    /// How long a rebalance or shutdown waits for a record in flight before abandoning it (its
    /// offset is then not committed, so the partition's next owner processes it again).
    public var drainTimeout: Duration
    /// A partition retrying for longer than this makes the stage report not ready.
    public var stuckAfter: Duration

    public init(
        deadLetterTopic: String, retry: RetryPolicy = RetryPolicy(), maxBatchSize: Int = 1,
        maxBufferedPerPartition: Int = 500, drainTimeout: Duration = .seconds(10), stuckAfter: Duration = .seconds(30)
    ) {
        self.deadLetterTopic = deadLetterTopic
        self.retry = retry
        self.maxBatchSize = max(1, maxBatchSize)
        self.maxBufferedPerPartition = max(2, maxBufferedPerPartition)
        self.drainTimeout = drainTimeout
        self.stuckAfter = stuckAfter
    }
}

/// Runs a ``PipelineStage``: consumes its input in a consumer group, processes each partition in
/// order (partitions concurrently), produces the outputs, and stores each input offset only after
/// every output was acknowledged by the broker.
///
/// Put it in the `ServiceGroup` after its producer and ``consumer``: on graceful shutdown it stops
/// fetching and finishes the records in flight; the consumer then commits and leaves the group,
/// and the producer flushes.
public final class StageRunner: Service, Sendable {
    /// The consumer this runner reads from; a service of its own (it commits and closes last).
    public let consumer: KafkaConsumer
    private let context: PartitionWorker.Context
    private let workers = Mutex<[KafkaTopicPartition: PartitionWorker]>([:])
    private let started = Atomic<Bool>(false)

    public init(
        stage: any PipelineStage, consumerConfiguration: KafkaConsumerConfiguration, producer: KafkaProducer,
        configuration: StageRunnerConfiguration, logger: Logger
    ) throws {
        var logger = logger
        logger[metadataKey: LogKey.stage] = "\(stage.name)"
        let relay = RebalanceRelay()
        consumer = try KafkaConsumer(configuration: consumerConfiguration, logger: logger, rebalanceListener: relay)
        context = PartitionWorker.Context(
            stage: stage, consumer: consumer, producer: producer, configuration: configuration,
            metrics: StageMetrics(stage: stage.name), logger: logger)
        relay.runner.withLock { $0.value = self }
    }

    public var stageName: String { context.stage.name }

    /// Ready once consuming, and while no partition has been stuck retrying for too long.
    public var isReady: Bool {
        guard started.load(ordering: .relaxed) else { return false }
        let stuck = workers.withLock { $0.values.contains { ($0.retryingFor ?? .zero) > context.configuration.stuckAfter } }
        return !stuck
    }

    public func run() async throws {
        started.store(true, ordering: .relaxed)
        context.logger.info("stage started")
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.reportLag() }
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
    }

    private func reportLag() async {
        while !Task.isCancelled {
            for (tp, lag) in consumer.lag() {
                context.metrics.lag(topic: tp.topic, partition: tp.partition, value: lag)
            }
            context.metrics.retrying(partitions: workers.withLock { $0.values.filter { $0.retryingFor != nil }.count })
            try? await Task.sleep(for: .seconds(5))
        }
    }
}

/// Forwards the consumer's rebalance calls to the runner created after it.
private final class RebalanceRelay: KafkaRebalanceListener {
    struct Weak { weak var value: StageRunner? }
    let runner = Mutex(Weak())
    func partitionsWillBeRevoked(_ partitions: [KafkaTopicPartition]) {
        runner.withLock { $0.value }?.revoke(partitions)
    }
    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) {}
}
