import CRdKafka
import EventLoopTimers
import Foundation
import LogKeys
import Logging
import ServiceLifecycle
import Synchronization

/// Told about partition movements, on the consumer's polling thread.
public protocol KafkaRebalanceListener: Sendable {
    /// Partitions are about to be taken away. Return once the work on their records is finished
    /// (bounded by your own deadline): the consumer then commits the stored offsets and releases them.
    func partitionsWillBeRevoked(_ partitions: [KafkaTopicPartition])
    /// Partitions were assigned to this member.
    func partitionsAssigned(_ partitions: [KafkaTopicPartition])
}

/// A consumer-group member with at-least-once offsets.
///
/// Records come from ``messages``, a pull-based `AsyncSequence`: nothing is taken into Swift until a
/// record is asked for, and then every record librdkafka has already fetched comes along (up to
/// ``drainLimit``), so a backlog costs a trip per batch. Every blocking librdkafka call runs on the
/// consumer's own serial dispatch queue, never on the cooperative thread pool. After finishing a record, call
/// ``storeOffset(_:)``; stored offsets are committed every `commitInterval`, synchronously before
/// partitions are revoked, and on ``close()``. Nothing that was not stored is ever committed.
///
/// Making a consumer does not join its group: ``subscribe()`` (or the first poll) does. A process
/// first does what can fail at start (binding its HTTP port, say), so a start that fails never leaves
/// a member in the group that the coordinator may keep assigning partitions to.
public final class KafkaConsumer: Service, Sendable {
    private let pollQueue = DispatchQueue(label: "kafka-consumer.poll")
    private let configuration: KafkaConsumerConfiguration
    private let logger: Logger
    private let listener: (any KafkaRebalanceListener)?
    private let state: Mutex<StateMachine>

    public init(
        configuration: KafkaConsumerConfiguration,
        logger: Logger,
        rebalanceListener: (any KafkaRebalanceListener)? = nil
    ) throws(KafkaError) {
        self.configuration = configuration
        self.logger = logger
        self.listener = rebalanceListener
        let conf = try RDKafkaConfig.make(configuration.librdkafkaProperties)
        rd_kafka_conf_set_events(
            conf,
            Int32(
                RD_KAFKA_EVENT_FETCH | RD_KAFKA_EVENT_REBALANCE | RD_KAFKA_EVENT_ERROR | RD_KAFKA_EVENT_LOG
                    | RD_KAFKA_EVENT_OFFSET_COMMIT))
        let handle = try RDKafkaConfig.newHandle(type: RD_KAFKA_CONSUMER, conf: conf)
        rd_kafka_poll_set_consumer(handle)
        let consumerQueue = rd_kafka_queue_get_consumer(handle)!
        rd_kafka_set_log_queue(handle, consumerQueue)
        // Owned from here on: destroyed with the last holder, also when the check below throws.
        state = Mutex(StateMachine(handle: ConsumerHandle(rk: handle, queue: consumerQueue)))
        guard !configuration.topics.isEmpty, !configuration.topics.contains(where: \.isEmpty) else {
            throw KafkaError(code: .configuration, reason: "a consumer needs at least one topic, each with a name: \(configuration.topics)")
        }
    }

    /// Joins the group with a subscription to the configured topics; does nothing when already
    /// subscribed. The first poll calls it too.
    public func subscribe() throws(KafkaError) {
        guard case .subscribe(let handle) = try state.withLock({ s throws(KafkaError) in try s.subscribe() }) else { return }
        let topics = TopicPartitionList(capacity: configuration.topics.count)
        for t in configuration.topics { topics.add(KafkaTopicPartition(topic: t, partition: Int32(RD_KAFKA_PARTITION_UA))) }
        let err = rd_kafka_subscribe(handle.rk, topics.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            state.withLock { $0.subscribeFailed(handle) }
            throw .rdKafka(.configuration, err, context: "subscribe to \(configuration.topics)")
        }
        logger.debug("subscribed", metadata: [LogKey.partitions: "\(configuration.topics)"])
    }

    /// The records of the subscribed topics, in order per partition.
    public var messages: KafkaMessageSequence { KafkaMessageSequence(consumer: self) }

    /// The partitions currently assigned to this member.
    public var assignment: Set<KafkaTopicPartition> { state.withLock { $0.assignment } }

    /// Marks a record as finished: its offset + 1 is committed with the next commit.
    public func storeOffset(_ message: KafkaMessage) throws(KafkaError) {
        try storeOffset(message.topicPartition, nextOffset: message.offset + 1)
    }

    /// Marks every record of `partition` before `nextOffset` as finished.
    public func storeOffset(_ partition: KafkaTopicPartition, nextOffset: Int64) throws(KafkaError) {
        let handle = try openHandle()
        let list = TopicPartitionList()
        list.add(partition, offset: nextOffset)
        let err = rd_kafka_offsets_store(handle.rk, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw .rdKafka(.offsetCommit, err, context: "store offset \(nextOffset) for \(partition)")
        }
        if let e = list.entries.first, e.error != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw .rdKafka(.offsetCommit, e.error, context: "store offset \(nextOffset) for \(partition)")
        }
    }

    /// Commits the stored offsets now and waits for the broker's answer.
    public func commit() async throws(KafkaError) {
        let handle = try openHandle()
        let err = await Blocking.run { rd_kafka_commit(handle.rk, nil, 0) }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET else {
            throw .rdKafka(.offsetCommit, err, context: "commit")
        }
    }

    /// Stops handing out and fetching records of these partitions until ``resume(_:)``; the
    /// position is kept. Records already taken from librdkafka are held back, in order, until then.
    public func pause(_ partitions: [KafkaTopicPartition]) throws(KafkaError) {
        let handle = try state.withLock { s throws(KafkaError) in try s.pause(Set(partitions)) }
        let list = TopicPartitionList.of(partitions)
        let err = rd_kafka_pause_partitions(handle.rk, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(.configuration, err, context: "pause") }
    }

    /// Resumes paused partitions: the records held back come first, then what is fetched anew.
    public func resume(_ partitions: [KafkaTopicPartition]) throws(KafkaError) {
        let handle = try state.withLock { s throws(KafkaError) in try s.resume(partitions) }
        let list = TopicPartitionList.of(partitions)
        let err = rd_kafka_resume_partitions(handle.rk, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(.configuration, err, context: "resume") }
    }

    /// How many times this consumer went to librdkafka for records: each trip takes every record
    /// already fetched (up to ``drainLimit``), so a backlog costs one trip per batch, not per record.
    public var pollRounds: Int { state.withLock { $0.pollRounds } }

    /// Records between this member's position and the partition's end, per assigned partition,
    /// from librdkafka's cached watermarks (no broker round trip). Partitions with no position yet
    /// are left out.
    public func lag() -> [KafkaTopicPartition: Int64] {
        let (assigned, handle) = state.withLock { ($0.assignment, try? $0.handle()) }
        guard !assigned.isEmpty, let handle else { return [:] }
        let list = TopicPartitionList.of(assigned)
        guard rd_kafka_position(handle.rk, list.pointer) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [:] }
        var result: [KafkaTopicPartition: Int64] = [:]
        for e in list.entries where e.offset >= 0 {
            var low: Int64 = 0
            var high: Int64 = 0
            guard
                rd_kafka_get_watermark_offsets(handle.rk, e.partition.topic, e.partition.partition, &low, &high)
                    == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0
            else { continue }
            result[e.partition] = max(0, high - e.offset)
        }
        return result
    }

    /// Serves until graceful shutdown, then commits and leaves the group.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    /// Commits stored offsets, leaves the group (handing partitions to the others) and frees the
    /// handle. ``messages`` ends afterwards.
    ///
    /// Returns after at most ``closeTimeout``: librdkafka has been seen to never answer the
    /// `rd_kafka_assign` of a leaving eager-protocol member, and a caller (a stage shutting down,
    /// a test) must not wait for ever on it. The handle is then left to librdkafka, and logged.
    public func close() async {
        let logger = self.logger
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let once = ResumeOnce(done)
            once.attach(
                EventLoopTimer.after(Self.closeTimeout) {
                    guard once.resume() else { return }
                    logger.error(
                        "the consumer did not close in time; carrying on without it",
                        metadata: [LogKey.kafkaCloseTimeout: "\(Self.closeTimeout.components.seconds)"])
                })
            pollQueue.async { [self] in
                closeOnPollQueue()
                once.resume()
            }
        }
    }

    /// The longest ``close()`` waits: the final commit, then up to 30 s of leaving the group.
    public static let closeTimeout: Duration = .seconds(45)

    // MARK: Polling (always on `pollQueue`)

    /// Returns the next record, polling for at most `timeout`; `nil` when none arrived or closed.
    /// ``messages`` is the usual way in; this serves loops that need their own deadline.
    public func poll(timeout: Duration) async -> KafkaMessage? {
        // Records already taken from librdkafka are handed out here, without a hop to the poll queue.
        if let next = state.withLock({ $0.takeBuffered() }) { return next }
        return await withCheckedContinuation { continuation in
            pollQueue.async { [self] in continuation.resume(returning: pollOnPollQueue(timeoutMs: Int32(timeout.milliseconds))) }
        }
    }

    /// The most events one trip to librdkafka takes without waiting, after the first.
    public static let drainLimit = 500

    var isClosed: Bool { state.withLock { $0.isClosed } }

    private func openHandle() throws(KafkaError) -> ConsumerHandle {
        try state.withLock { s throws(KafkaError) in try s.handle() }
    }

    private func pollOnPollQueue(timeoutMs: Int32) -> KafkaMessage? {
        if let next = state.withLock({ $0.takeBuffered() }) { return next }
        do {
            try subscribe()
        } catch {
            if error.code != .closed { logger.error("could not subscribe", metadata: [LogKey.kafkaError: "\(error)"]) }
            return nil
        }
        let handle: ConsumerHandle
        switch state.withLock({ $0.nextPoll(commitInterval: configuration.commitInterval) }) {
        case .record(let record): return record
        case .closed: return nil
        case .poll(let h, let commit):
            handle = h
            if commit { _ = rd_kafka_commit(handle.rk, nil, 1) }
        }
        guard let event = rd_kafka_queue_poll(handle.queue, timeoutMs) else { return nil }
        self.handle(event, on: handle)
        rd_kafka_event_destroy(event)
        // librdkafka hands out one record per event: take the ones already fetched now, without
        // waiting, so that the caller gets them from the buffer instead of a trip here each.
        var taken = 0
        while taken < Self.drainLimit, let more = rd_kafka_queue_poll(handle.queue, 0) {
            self.handle(more, on: handle)
            rd_kafka_event_destroy(more)
            taken += 1
        }
        return state.withLock { $0.takeBuffered() }
    }

    private func handle(_ event: OpaquePointer, on handle: ConsumerHandle) {
        switch Int32(rd_kafka_event_type(event)) {
        case RD_KAFKA_EVENT_FETCH:
            var batch: [KafkaMessage] = []
            while let m = rd_kafka_event_message_next(event) {
                if m.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    logger.warning("consumer error", metadata: [LogKey.kafkaError: "\(String(cString: rd_kafka_err2str(m.pointee.err)))"])
                    continue
                }
                batch.append(RDKafkaEvents.message(UnsafeMutablePointer(mutating: m)))
            }
            state.withLock { $0.fetched(batch) }
        case RD_KAFKA_EVENT_REBALANCE:
            rebalance(event, on: handle)
        case RD_KAFKA_EVENT_ERROR:
            let e = RDKafkaEvents.error(event)
            logger.log(level: e.fatal ? .error : .debug, "consumer error", metadata: [LogKey.kafkaError: "\(e.reason)"])
        case RD_KAFKA_EVENT_LOG:
            RDKafkaEvents.log(event, logger: logger)
        case RD_KAFKA_EVENT_OFFSET_COMMIT:
            let err = rd_kafka_event_error(event)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET {
                logger.warning("offset commit failed", metadata: [LogKey.kafkaError: "\(String(cString: rd_kafka_err2str(err)))"])
            }
        default:
            break
        }
    }

    private func rebalance(_ event: OpaquePointer, on handle: ConsumerHandle) {
        guard let raw = rd_kafka_event_topic_partition_list(event) else { return }
        let list = TopicPartitionList(copying: raw)
        let partitions = list.partitions
        let cooperative = String(cString: rd_kafka_rebalance_protocol(handle.rk)) == "COOPERATIVE"
        switch rd_kafka_event_error(event) {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            if cooperative {
                if let error = rd_kafka_incremental_assign(handle.rk, list.pointer) {
                    logger.error(
                        "incremental assign failed",
                        metadata: [LogKey.kafkaError: "\(KafkaError.rdKafka(.configuration, taking: error, context: "assign"))"])
                }
            } else {
                _ = rd_kafka_assign(handle.rk, list.pointer)
            }
            // A partition paused under an earlier assignment would stay paused: start it fetching.
            _ = rd_kafka_resume_partitions(handle.rk, list.pointer)
            state.withLock { $0.assigned(partitions) }
            logger.info("partitions assigned", metadata: [LogKey.partitions: "\(partitions.map(\.description))"])
            listener?.partitionsAssigned(partitions)
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            revoke(partitions, list: list, cooperative: cooperative, on: handle)
        default:
            logger.error("rebalance error", metadata: [LogKey.kafkaError: "\(String(cString: rd_kafka_err2str(rd_kafka_event_error(event))))"])
            _ = rd_kafka_assign(handle.rk, nil)
            state.withLock { $0.lostAssignment() }
        }
    }

    /// Lets the application finish, drops buffered records of the revoked partitions (their next
    /// owner gets them), commits what was stored, then releases the partitions.
    private func revoke(_ partitions: [KafkaTopicPartition], list: TopicPartitionList, cooperative: Bool, on handle: ConsumerHandle) {
        state.withLock { $0.revoked(Set(partitions)) }
        listener?.partitionsWillBeRevoked(partitions)
        let err = rd_kafka_commit(handle.rk, nil, 0)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET {
            logger.warning("commit on revoke failed", metadata: [LogKey.kafkaError: "\(String(cString: rd_kafka_err2str(err)))"])
        }
        if cooperative {
            if let error = rd_kafka_incremental_unassign(handle.rk, list.pointer) { rd_kafka_error_destroy(error) }
        } else {
            _ = rd_kafka_assign(handle.rk, nil)
        }
        logger.info("partitions revoked", metadata: [LogKey.partitions: "\(partitions.map(\.description))"])
    }

    /// Takes the handle from the state (no call gets it after this), commits, leaves the group;
    /// the handle is destroyed when the last call that still holds it returns.
    private func closeOnPollQueue() {
        guard case .close(let handle) = state.withLock({ $0.close() }) else { return }
        let err = rd_kafka_commit(handle.rk, nil, 0)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET {
            logger.warning("final commit failed", metadata: [LogKey.kafkaError: "\(String(cString: rd_kafka_err2str(err)))"])
        }
        if let error = rd_kafka_consumer_close_queue(handle.rk, handle.queue) {
            rd_kafka_error_destroy(error)
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while rd_kafka_consumer_closed(handle.rk) == 0 && ContinuousClock.now < deadline {
            guard let event = rd_kafka_queue_poll(handle.queue, 100) else { continue }
            if Int32(rd_kafka_event_type(event)) == RD_KAFKA_EVENT_REBALANCE {
                // Leaving: hand everything back; the application is already told by `closed`.
                if String(cString: rd_kafka_rebalance_protocol(handle.rk)) == "COOPERATIVE",
                    let raw = rd_kafka_event_topic_partition_list(event)
                {
                    if let error = rd_kafka_incremental_unassign(handle.rk, raw) { rd_kafka_error_destroy(error) }
                } else {
                    _ = rd_kafka_assign(handle.rk, nil)
                }
            }
            rd_kafka_event_destroy(event)
        }
        logger.debug("consumer closed")
    }
}

/// The pull-based stream of a ``KafkaConsumer``'s records. Ends when the consumer closes or the
/// iterating task is cancelled.
public struct KafkaMessageSequence: AsyncSequence, Sendable {
    public typealias Element = KafkaMessage
    let consumer: KafkaConsumer

    public struct AsyncIterator: AsyncIteratorProtocol {
        let consumer: KafkaConsumer
        public mutating func next() async -> KafkaMessage? {
            while !Task.isCancelled && !consumer.isClosed {
                if let m = await consumer.poll(timeout: .milliseconds(100)) { return m }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }
}
