import DequeModule
import KafkaClient

extension PartitionWorker {
    /// A partition worker's shared state, changed only under one lock: the consumer's thread adds
    /// records and stops the worker, the worker's task takes batches and pauses for retries. Each
    /// event returns what to do (wake the task, tell the consumer to pause or resume, tell those
    /// waiting for the batch in flight), done by the caller after the lock is released.
    struct StateMachine {
        enum State {
            /// Taking records. `waiter` is the worker's task waiting for one; `inFlight`, whether
            /// a batch is being handled.
            case running(waiter: CheckedContinuation<Void, Never>?, inFlight: Bool)
            /// Taking no more records; a batch is still in flight, and `drained` are told when it
            /// ends (finished, or given up because the worker stops).
            case stopping(drained: [@Sendable () -> Void])
            /// Stopped, nothing in flight.
            case stopped
        }

        private(set) var state: State = .running(waiter: nil, inFlight: false)
        private var buffer = Deque<KafkaMessage>()
        private var pausedForBuffer = false
        private var pausedForRetry = false
        /// A wake-up (a parked record's time came) that found the task not yet waiting.
        private var wakePending = false
        /// When the record being retried first failed.
        private(set) var retryingSince: ContinuousClock.Instant?
        /// Above this many buffered records the partition is paused; resumed at half.
        let highWater: Int
        let maxBatch: Int

        init(highWater: Int, maxBatch: Int) {
            self.highWater = highWater
            self.maxBatch = maxBatch
        }

        /// Whether the consumer should hold the partition back now.
        var isPaused: Bool { pausedForBuffer || pausedForRetry }

        var isStopping: Bool {
            if case .running = state { return false }
            return true
        }

        // MARK: Records in

        struct EnqueueAction {
            /// The worker's task, waiting for a record.
            var wake: CheckedContinuation<Void, Never>?
            /// The buffer reached the high-water mark: the consumer must pause the partition.
            var pause = false
        }

        /// Adds a record; dropped when stopping (the partition's next owner reads it again).
        mutating func enqueue(_ message: KafkaMessage) -> EnqueueAction {
            guard case .running(let waiter, let inFlight) = state else { return EnqueueAction() }
            buffer.append(message)
            state = .running(waiter: nil, inFlight: inFlight)
            let wasPaused = isPaused
            if buffer.count >= highWater { pausedForBuffer = true }
            return EnqueueAction(wake: waiter, pause: !wasPaused && isPaused)
        }

        // MARK: The worker's task

        enum TakeAction {
            /// Handle these records; `resume` when the consumer may fetch the partition again.
            case batch([KafkaMessage], resume: Bool)
            /// Nothing buffered: wait (``wait(_:)``).
            case wait
            /// Stopping: end the task.
            case stop
        }

        /// Takes up to ``maxBatch`` records and marks them in flight.
        mutating func take() -> TakeAction {
            guard case .running(let waiter, _) = state else { return .stop }
            guard !buffer.isEmpty else { return .wait }
            let n = min(maxBatch, buffer.count)
            let batch = Array(buffer.prefix(n))
            buffer.removeFirst(n)
            state = .running(waiter: waiter, inFlight: true)
            var resume = false
            if pausedForBuffer && buffer.count <= highWater / 2 {
                pausedForBuffer = false
                resume = !isPaused
            }
            return .batch(batch, resume: resume)
        }

        /// Keeps the task's continuation until a record or a stop comes; false when one already
        /// did (the caller resumes it at once).
        mutating func wait(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
            guard case .running(_, let inFlight) = state, buffer.isEmpty, !wakePending else {
                wakePending = false
                return false
            }
            state = .running(waiter: continuation, inFlight: inFlight)
            return true
        }

        /// Wakes the task waiting for records (a parked record is due); remembered when it is not
        /// waiting yet, so the wake-up is not lost.
        mutating func wakeWaiter() -> CheckedContinuation<Void, Never>? {
            guard case .running(let waiter, let inFlight) = state else { return nil }
            guard let waiter else {
                wakePending = true
                return nil
            }
            state = .running(waiter: nil, inFlight: inFlight)
            return waiter
        }

        /// Marks a parked record's retry in flight, as a batch is; false when stopping.
        mutating func beginParkedRetry() -> Bool {
            guard case .running(let waiter, _) = state else { return false }
            state = .running(waiter: waiter, inFlight: true)
            return true
        }

        /// The batch in flight ended; returns whom to tell when that ends a stop.
        mutating func batchFinished() -> [@Sendable () -> Void] {
            switch state {
            case .running(let waiter, _):
                state = .running(waiter: waiter, inFlight: false)
                return []
            case .stopping(let drained):
                state = .stopped
                return drained
            case .stopped:
                return []
            }
        }

        // MARK: Retries

        /// A record failed transiently; returns whether the consumer must now pause the partition.
        mutating func retrying() -> Bool {
            if retryingSince == nil { retryingSince = .now }
            let was = isPaused
            pausedForRetry = true
            return !was
        }

        /// The record being retried ended; returns whether the consumer may now resume the partition.
        mutating func retryEnded() -> Bool {
            guard pausedForRetry || retryingSince != nil else { return false }
            retryingSince = nil
            let was = isPaused
            pausedForRetry = false
            return was && !isPaused
        }

        // MARK: Stopping

        struct StopAction {
            /// The worker's task, waiting for a record: it must wake to end.
            var wake: CheckedContinuation<Void, Never>?
            /// Nothing is in flight: `drained` was not kept, there is nothing to wait for.
            var drained: Bool
        }

        /// Takes no more records and drops the buffered ones; `drained` is called when the batch in
        /// flight ends, unless nothing is in flight (then the action says so).
        mutating func stop(whenDrained drained: @escaping @Sendable () -> Void) -> StopAction {
            buffer.removeAll()
            switch state {
            case .running(let waiter, let inFlight):
                state = inFlight ? .stopping(drained: [drained]) : .stopped
                return StopAction(wake: waiter, drained: !inFlight)
            case .stopping(let others):
                state = .stopping(drained: others + [drained])
                return StopAction(wake: nil, drained: false)
            case .stopped:
                return StopAction(wake: nil, drained: true)
            }
        }
    }
}
