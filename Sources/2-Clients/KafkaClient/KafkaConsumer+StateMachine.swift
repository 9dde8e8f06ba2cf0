import CRdKafka
import DequeModule

/// librdkafka's consumer handle and its consumer queue, destroyed when the last holder lets go.
///
/// Only ``KafkaConsumer/StateMachine`` hands it out, and only while the consumer is open: a call
/// that got it finishes with a live handle even when ``KafkaConsumer/close()`` runs meanwhile, and
/// no call can get it after close. Use after destruction is impossible by construction.
final class ConsumerHandle: @unchecked Sendable {
    let rk: OpaquePointer
    let queue: OpaquePointer

    init(rk: OpaquePointer, queue: OpaquePointer) {
        self.rk = rk
        self.queue = queue
    }

    deinit {
        rd_kafka_queue_destroy(queue)
        rd_kafka_destroy(rk)
    }
}

extension KafkaConsumer {
    /// Everything the consumer's threads share, changed only under one lock. Each event returns
    /// what to do (an action, often carrying the handle), done by the caller after the lock is
    /// released: librdkafka is never called under the lock. Modelled on swift-kafka-client's
    /// `KafkaConsumer.StateMachine`.
    struct StateMachine {
        enum State {
            /// Made; not yet in the group (``KafkaConsumer/subscribe()`` or the first poll joins).
            case initializing(ConsumerHandle)
            /// Subscribed: a member of the group, or joining it.
            case consuming(ConsumerHandle)
            /// ``KafkaConsumer/close()`` took the handle; nothing else gets it again.
            case closed
        }

        private(set) var state: State
        /// Records taken from librdkafka and not yet handed out, in the order they came.
        private var buffered = Deque<KafkaMessage>()
        /// Records of paused partitions taken before the pause, handed out after a resume.
        private var held: [KafkaTopicPartition: [KafkaMessage]] = [:]
        private var paused: Set<KafkaTopicPartition> = []
        private(set) var assignment: Set<KafkaTopicPartition> = []
        private var lastCommit: ContinuousClock.Instant = .now
        private(set) var pollRounds = 0

        init(handle: ConsumerHandle) { state = .initializing(handle) }

        var isClosed: Bool {
            if case .closed = state { return true }
            return false
        }

        /// The handle for a call on an open consumer.
        func handle() throws(KafkaError) -> ConsumerHandle {
            switch state {
            case .initializing(let handle), .consuming(let handle): return handle
            case .closed: throw KafkaError(code: .closed, reason: "the consumer is closed")
            }
        }

        // MARK: Joining

        enum SubscribeAction {
            /// Subscribe with this handle; on failure call ``subscribeFailed(_:)``.
            case subscribe(ConsumerHandle)
            /// Already subscribed.
            case none
        }

        mutating func subscribe() throws(KafkaError) -> SubscribeAction {
            switch state {
            case .initializing(let handle):
                state = .consuming(handle)
                return .subscribe(handle)
            case .consuming: return .none
            case .closed: throw KafkaError(code: .closed, reason: "the consumer is closed")
            }
        }

        /// The subscription was refused: the next call tries again.
        mutating func subscribeFailed(_ handle: ConsumerHandle) {
            if case .consuming = state { state = .initializing(handle) }
        }

        // MARK: Polling

        enum PollAction {
            /// A record already taken from librdkafka: hand it out.
            case record(KafkaMessage)
            /// Go to librdkafka's queue with this handle; commit the stored offsets first if due.
            case poll(ConsumerHandle, commit: Bool)
            /// Closed: nothing more comes.
            case closed
        }

        /// The next record already taken, if any.
        mutating func takeBuffered() -> KafkaMessage? { buffered.popFirst() }

        mutating func nextPoll(commitInterval: Duration) -> PollAction {
            if let record = buffered.popFirst() { return .record(record) }
            guard case .consuming(let handle) = state else { return .closed }
            pollRounds += 1
            let now = ContinuousClock.now
            let due = now - lastCommit >= commitInterval
            if due { lastCommit = now }
            return .poll(handle, commit: due)
        }

        /// Records of paused partitions wait in `held`, so nothing of theirs is handed out.
        mutating func fetched(_ records: [KafkaMessage]) {
            for record in records {
                if paused.contains(record.topicPartition) {
                    held[record.topicPartition, default: []].append(record)
                } else {
                    buffered.append(record)
                }
            }
        }

        // MARK: Pausing

        /// Holds back the partitions' records already taken; returns the handle to pause them with.
        mutating func pause(_ partitions: Set<KafkaTopicPartition>) throws(KafkaError) -> ConsumerHandle {
            let handle = try handle()
            paused.formUnion(partitions)
            var kept = Deque<KafkaMessage>()
            for record in buffered {
                if partitions.contains(record.topicPartition) {
                    held[record.topicPartition, default: []].append(record)
                } else {
                    kept.append(record)
                }
            }
            buffered = kept
            return handle
        }

        /// Hands out the partitions' held records first; returns the handle to resume them with.
        mutating func resume(_ partitions: [KafkaTopicPartition]) throws(KafkaError) -> ConsumerHandle {
            let handle = try handle()
            for p in partitions {
                paused.remove(p)
                buffered.append(contentsOf: held.removeValue(forKey: p) ?? [])
            }
            return handle
        }

        // MARK: Rebalancing

        mutating func assigned(_ partitions: [KafkaTopicPartition]) {
            assignment.formUnion(partitions)
            paused.subtract(partitions)
        }

        /// Drops what was taken of the partitions: their next owner gets those records.
        mutating func revoked(_ partitions: Set<KafkaTopicPartition>) {
            buffered.removeAll { partitions.contains($0.topicPartition) }
            for p in partitions { held[p] = nil }
            paused.subtract(partitions)
            assignment.subtract(partitions)
        }

        mutating func lostAssignment() { assignment.removeAll() }

        // MARK: Closing

        enum CloseAction {
            /// Commit, leave the group and let the handle go.
            case close(ConsumerHandle)
            /// Closed before.
            case none
        }

        mutating func close() -> CloseAction {
            let action: CloseAction
            switch state {
            case .initializing(let handle), .consuming(let handle): action = .close(handle)
            case .closed: action = .none
            }
            state = .closed
            buffered.removeAll()
            held.removeAll()
            paused.removeAll()
            assignment.removeAll()
            return action
        }
    }
}
