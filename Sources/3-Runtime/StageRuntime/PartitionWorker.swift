import ErrorClassification
import EventLoopTimers
import Foundation
import KafkaClient
import LogKeys
import Logging
import Metrics
import PipelineRecords
import Synchronization
import Tracing

/// Processes one assigned partition's records in order, one batch at a time, on its own task.
///
/// Its buffer is bounded: above the high-water mark the partition is paused in the consumer, and
/// resumed once the buffer drains to half. While a record is retried after a transient failure
/// the partition is paused too, so nothing is fetched that could overtake it. The state shared by
/// the consumer's thread and the worker's task is one ``StateMachine``; stopping waits on it for the
/// batch in flight, never by polling.
final class PartitionWorker: Sendable {
    struct Context: Sendable {
        let stage: any PipelineStage
        let consumer: KafkaConsumer
        let producer: KafkaProducer
        let configuration: StageRunnerConfiguration
        let metrics: StageMetrics
        /// When any partition of the stage last finished a record: tells a record's own failure
        /// from an outage (see ``RetryPolicy``).
        let progress: StageProgress
        let logger: Logger
    }

    let partition: KafkaTopicPartition
    private let context: Context
    private let state: Mutex<StateMachine>
    /// Whether the consumer was last told to pause this partition (see ``applyPaused()``).
    private let consumerPaused = Mutex(false)
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(partition: KafkaTopicPartition, context: Context) {
        self.partition = partition
        self.context = context
        state = Mutex(
            StateMachine(highWater: context.configuration.maxBufferedPerPartition, maxBatch: context.configuration.maxBatchSize))
        let t = Task { [self] in await self.loop() }
        task.withLock { $0 = t }
    }

    /// How long the current record has been retried, if it is being retried.
    var retryingFor: Duration? {
        state.withLock { $0.retryingSince.map { ContinuousClock.now - $0 } }
    }

    /// Adds a consumed record; pauses the partition when the buffer passes the high-water mark.
    func enqueue(_ message: KafkaMessage) {
        let action = state.withLock { $0.enqueue(message) }
        if action.pause { applyPaused() }
        action.wake?.resume()
    }

    /// Stops taking new records, waits up to `timeout` for the batch in flight, then cancels.
    /// Blocking: called on the consumer's polling thread during a rebalance.
    func stopBlocking(timeout: Duration) {
        let drained = DispatchSemaphore(value: 0)
        let action = state.withLock { $0.stop(whenDrained: { drained.signal() }) }
        action.wake?.resume()
        if !action.drained { _ = drained.wait(timeout: .now() + .nanoseconds(Int(timeout.nanoseconds))) }
        task.withLock { $0?.cancel() }
    }

    /// Stops taking new records, waits up to `timeout` for the batch in flight, then cancels.
    func stop(timeout: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waited = ResumeOnce(continuation)
            let action = state.withLock { $0.stop(whenDrained: { waited.resume() }) }
            action.wake?.resume()
            if action.drained {
                waited.resume()
            } else {
                waited.attach(EventLoopTimer.after(timeout) { waited.resume() })
            }
        }
        let t = task.withLock { $0 }
        t?.cancel()
        await t?.value
    }

    // MARK: The worker task

    private func loop() async {
        while let batch = await take() {
            await handle(batch)
            for drained in state.withLock({ $0.batchFinished() }) { drained() }
        }
    }

    /// Waits for records; returns up to `maxBatchSize` of them, marked in flight, or nil when stopping.
    private func take() async -> [KafkaMessage]? {
        while true {
            switch state.withLock({ $0.take() }) {
            case .stop: return nil
            case .batch(let batch, let resume):
                if resume { applyPaused() }
                return batch
            case .wait:
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    if !state.withLock({ $0.wait(c) }) { c.resume() }
                }
            }
        }
    }

    private var stopping: Bool { state.withLock { $0.isStopping } || Task.isCancelled }

    /// Runs a batch to completion: every record ends produced-and-stored or dead-lettered-and-stored,
    /// unless the worker is stopped, in which case the rest is left for the partition's next owner.
    private func handle(_ batch: [KafkaMessage]) async {
        let spans = RecordSpans(batch, stage: context.stage.name)
        defer { spans.endUnfinished() }
        var pending = spans.records[...]
        var attempts = 0
        var firstFailure: Date?
        var firstFailureInstant: ContinuousClock.Instant?
        var lastFailureInstant: ContinuousClock.Instant?
        // Set when the cap would apply to a failure the whole batch threw: the next pass goes one
        // record at a time, so that only the record that fails is dead-lettered.
        var isolate = false
        // Inputs whose outputs were delivered, told to the stage before any wait and at the end.
        var delivered: [KafkaMessage] = []
        defer { if !delivered.isEmpty { context.stage.delivered(delivered) } }
        func reportDelivered() {
            guard !delivered.isEmpty else { return }
            context.stage.delivered(delivered)
            delivered.removeAll()
        }
        while !pending.isEmpty, !stopping {
            let started = ContinuousClock.now
            var results: [Result<[KafkaOutgoingMessage], any Error>]
            var batchThrew = false
            if isolate {
                results = await oneByOne(pending, spans: spans)
                isolate = false
            } else {
                do {
                    results = try await ServiceContext.withValue(spans.context(from: spans.firstPending)) {
                        try await context.stage.process(batch: Array(pending))
                    }
                } catch {
                    batchThrew = true
                    let failure = FailureClassification(error)
                    if !failure.isTransient && pending.count > 1 {
                        // Find the bad record: go one at a time.
                        results = await oneByOne(pending, spans: spans)
                    } else {
                        results = [.failure(error)]
                    }
                }
            }
            if results.isEmpty {
                results = [.failure(StageError.permanent(.returnedNothing, "the stage returned no result for the record"))]
            }
            var index = 0
            passOverResults: while index < results.count {
                guard let message = pending.first, !stopping else { return }
                switch results[index] {
                case .success:
                    // The records that succeeded in a row send their outputs together, in order, and
                    // wait for one acknowledgement: one batch to the broker instead of one record each
                    // (a record's outputs were acknowledged before the next record's were sent).
                    var outputs: [[KafkaOutgoingMessage]] = []
                    // Never past the records left: a stage that returned extra results gets them ignored.
                    while outputs.count < pending.count, index + outputs.count < results.count,
                        case .success(let next) = results[index + outputs.count]
                    {
                        outputs.append(next)
                    }
                    let inputs = Array(pending.prefix(outputs.count))
                    guard await deliver(outputs, for: inputs) else { return }
                    delivered.append(contentsOf: inputs)
                    let elapsed = (ContinuousClock.now - started).nanoseconds
                    for _ in inputs { context.metrics.processing.recordNanoseconds(elapsed) }
                    context.metrics.succeeded.increment(by: inputs.count)
                    context.progress.recordSucceeded()
                    spans.delivered(outputs: outputs.map(\.count), attempts: attempts + 1)
                    attempts = 0
                    firstFailure = nil
                    firstFailureInstant = nil
                    lastFailureInstant = nil
                    endRetry()
                    pending = pending.dropFirst(inputs.count)
                    index += inputs.count
                case .failure(let error):
                    var failure = FailureClassification(error)
                    attempts += 1
                    let now = Date()
                    if firstFailure == nil { firstFailure = now }
                    let since = firstFailureInstant ?? .now
                    firstFailureInstant = since
                    let previousFailure = lastFailureInstant
                    lastFailureInstant = .now
                    if failure.isTransient {
                        // Its own failure, not an outage: another record succeeded while it waited.
                        let capped =
                            context.configuration.retry.capReached(attempts: attempts, since: since)
                            && previousFailure.map { context.progress.succeeded(after: $0) } == true
                        if capped, batchThrew, pending.count > 1 {
                            isolate = true
                        } else if capped {
                            failure = failure.capped(attempts: attempts, over: .now - since)
                        }
                    }
                    if failure.isTransient {
                        spans.retrying(error, code: "\(failure.code)", attempt: attempts)
                        reportDelivered()
                        guard await backoff(message, failure: failure, attempt: attempts) else { return }
                        // A transient failure ends this pass over the results: retry from that record.
                        break passOverResults
                    }
                    let letter = DeadLetterHeader.record(
                        for: message, topic: context.configuration.deadLetterTopic, stage: context.stage.name,
                        failure: failure, attempts: attempts, firstFailure: firstFailure ?? now, lastFailure: now)
                    context.logger.warning(
                        "record dead-lettered",
                        metadata: log(message).merging([
                            LogKey.errorCode: "\(failure.code)", LogKey.errorMessage: "\(failure.message)",
                        ]) { a, _ in a })
                    guard await deliver([letter], for: message, deadLetter: true) else { return }
                    context.metrics.deadLettered(code: failure.code)
                    spans.deadLettered(code: "\(failure.code)", attempts: attempts)
                    attempts = 0
                    firstFailure = nil
                    firstFailureInstant = nil
                    lastFailureInstant = nil
                    endRetry()
                    pending = pending.dropFirst()
                    index += 1
                }
            }
        }
    }

    private func oneByOne(_ pending: ArraySlice<KafkaMessage>, spans: RecordSpans) async -> [Result<[KafkaOutgoingMessage], any Error>] {
        var results: [Result<[KafkaOutgoingMessage], any Error>] = []
        for (index, message) in pending.enumerated() {
            do {
                let record = spans.context(from: spans.firstPending + index)
                results.append(.success(try await ServiceContext.withValue(record) { try await context.stage.process(message) }))
            } catch {
                results.append(.failure(error))
                if FailureClassification(error).isTransient { break }
            }
        }
        return results
    }

    /// Delivers the outputs of records that succeeded in a row: all sent at once, in order, then their
    /// offsets stored in order. When that send fails (some outputs may be written), each record is
    /// delivered again on its own, with retries in place, as a lone record is; a repeat downstream is
    /// a duplicate, which every consumer drops. Returns false when the worker was stopped first.
    private func deliver(_ outputs: [[KafkaOutgoingMessage]], for inputs: [KafkaMessage]) async -> Bool {
        if inputs.count == 1 { return await deliver(outputs[0], for: inputs[0]) }
        let all = outputs.flatMap { $0 }
        if !all.isEmpty {
            do {
                _ = try await context.producer.sendAll(all)
                context.metrics.produced.increment(by: all.count)
            } catch {
                context.logger.debug("producing a batch's outputs failed; delivering them one record at a time", error: error)
                for (input, outputs) in zip(inputs, outputs) {
                    guard await deliver(outputs, for: input) else { return false }
                }
                return true
            }
        }
        for input in inputs { storeOffset(input) }
        return true
    }

    /// Marks the input finished, so the consumer commits past it.
    private func storeOffset(_ message: KafkaMessage) {
        do {
            try context.consumer.storeOffset(message)
        } catch {
            // The partition was revoked meanwhile: its next owner redoes this record.
            context.logger.debug("offset not stored", error: error, metadata: log(message))
        }
    }

    /// Produces the outputs (retrying transient broker failures in place), then stores the input's
    /// offset. Returns false when the worker was stopped first.
    private func deliver(_ outputs: [KafkaOutgoingMessage], for message: KafkaMessage, deadLetter: Bool = false) async -> Bool {
        var attempt = 0
        while !stopping {
            do {
                if !outputs.isEmpty {
                    _ = try await context.producer.sendAll(outputs)
                    if !deadLetter { context.metrics.produced.increment(by: outputs.count) }
                }
                storeOffset(message)
                return true
            } catch {
                attempt += 1
                let failure = FailureClassification(error)
                context.logger.warning(
                    "producing outputs failed; retrying",
                    metadata: log(message).merging([
                        LogKey.errorCode: "\(failure.code)", LogKey.attempt: "\(attempt)",
                    ]) { a, _ in a })
                guard await backoff(message, failure: failure, attempt: attempt) else { return false }
            }
        }
        return false
    }

    /// Pauses the partition and waits before the next attempt. False when stopped meanwhile.
    private func backoff(_ message: KafkaMessage, failure: FailureClassification, attempt: Int) async -> Bool {
        context.metrics.retried.increment()
        let pause = state.withLock { $0.retrying() }
        if pause { applyPaused() }
        let delay = context.configuration.retry.delay(afterAttempt: attempt, retryAfter: failure.retryAfter)
        context.logger.info(
            "transient failure; retrying in place",
            metadata: log(message).merging([
                LogKey.errorCode: "\(failure.code)", LogKey.errorMessage: "\(failure.message)", LogKey.attempt: "\(attempt)",
                LogKey.retryDelay: "\(delay.milliseconds)",
            ]) { a, _ in a })
        do { try await Task.sleep(for: delay) } catch { return false }
        return !stopping
    }

    private func endRetry() {
        if state.withLock({ $0.retryEnded() }) { applyPaused() }
    }

    /// Tells the consumer whether to fetch this partition, as the state says now. The consumer's
    /// thread (a full buffer) and the worker's task (a drained buffer, a retry) change the state
    /// concurrently; each then calls this, and the consumer is told under `consumerPaused`'s lock,
    /// so the last call applies the newest state. Had each told the consumer what it decided under
    /// the state's lock, a pause could reach the consumer after the resume that undid it, and the
    /// partition would stay paused with nothing left to resume it.
    private func applyPaused() {
        consumerPaused.withLock { applied in
            let wanted = state.withLock { $0.isPaused }
            guard wanted != applied else { return }
            do {
                if wanted { try context.consumer.pause([partition]) } else { try context.consumer.resume([partition]) }
                applied = wanted
            } catch {
                context.logger.warning("pause/resume failed", error: error, metadata: [LogKey.partition: "\(partition)"])
            }
        }
    }

    private func log(_ m: KafkaMessage) -> Logger.Metadata {
        [LogKey.topic: "\(m.topic)", LogKey.partition: "\(m.partition)", LogKey.offset: "\(m.offset)"]
    }
}

/// When the stage last finished a record, shared by its partitions' workers.
final class StageProgress: Sendable {
    private let lastSuccess = Mutex<ContinuousClock.Instant?>(nil)

    func recordSucceeded() {
        lastSuccess.withLock { $0 = .now }
    }

    /// Whether some record succeeded after `instant`.
    func succeeded(after instant: ContinuousClock.Instant) -> Bool {
        lastSuccess.withLock { $0.map { $0 > instant } ?? false }
    }
}
