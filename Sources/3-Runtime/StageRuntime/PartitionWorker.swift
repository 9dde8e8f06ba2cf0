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
/// resumed once the buffer drains to half. A record that fails transiently is retried in place, the
/// partition paused meanwhile so nothing is fetched that could overtake it; when the failure proves
/// its own (the rest of the stage makes progress), the record is parked instead (``Parking``) and
/// the partition moves on, its key's later records held behind it; so is, at once, a record that
/// must wait for something only it needs (``FailureClassification/isDeferral``). The state shared by the
/// consumer's thread and the worker's task is one ``StateMachine``; stopping waits on it for the
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
    /// Touched only by the worker's task (a lock for `Sendable`'s sake, never contended).
    private let parking: Mutex<Parking>

    init(partition: KafkaTopicPartition, context: Context) {
        self.partition = partition
        self.context = context
        state = Mutex(
            StateMachine(highWater: context.configuration.maxBufferedPerPartition, maxBatch: context.configuration.maxBatchSize))
        parking = Mutex(Parking(capacity: context.configuration.maxParkedPerPartition))
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
        while let work = await next() {
            var records = work.records
            var history = work.history
            // A pass that parked a record hands back the records after it.
            while !records.isEmpty, !stopping {
                records = await handle(records, history: history)
                history = FailureHistory()
            }
            if work.parked { storeOffset(parking.withLock { $0.advance() }) }
            for drained in state.withLock({ $0.batchFinished() }) { drained() }
        }
    }

    /// Waits for work, marked in flight: a parked record whose time came (with the records held
    /// behind it), else up to `maxBatchSize` buffered records. Nil when stopping.
    private func next() async -> (records: [KafkaMessage], history: FailureHistory, parked: Bool)? {
        while true {
            if let due = parking.withLock({ $0.takeDue() }) {
                guard state.withLock({ $0.beginParkedRetry() }) else { return nil }
                return (due.records, due.history, true)
            }
            let (full, due) = parking.withLock { ($0.isFull, $0.nextDue) }
            if full, let due {
                // No new batch until a parked record ends: the buffer fills and pauses the partition.
                do { try await Task.sleep(until: due) } catch { return nil }
                if stopping { return nil }
                continue
            }
            switch state.withLock({ $0.take() }) {
            case .stop: return nil
            case .batch(let batch, let resume):
                if resume { applyPaused() }
                return (batch, FailureHistory(), false)
            case .wait:
                let timer = due.map { due in
                    EventLoopTimer.after(max(.zero, due - .now)) { [self] in state.withLock { $0.wakeWaiter() }?.resume() }
                }
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    if !state.withLock({ $0.wait(c) }) { c.resume() }
                }
                timer?.cancel()
            }
        }
    }

    private var stopping: Bool { state.withLock { $0.isStopping } || Task.isCancelled }

    /// Runs records to completion: each ends produced, dead-lettered or parked (its offset stored
    /// as far as ``Parking`` allows), unless the worker is stopped, in which case the rest is left for
    /// the partition's next owner. Records whose key has a parked record are held behind it. Parking
    /// a record ends the pass: the records after it are returned, to be handled next.
    ///
    /// - Parameter history: the first record's failures so far (a parked record tried again).
    private func handle(_ records: [KafkaMessage], history: FailureHistory) async -> [KafkaMessage] {
        let batch = parking.withLock { parking in records.filter { !parking.holdIfBlocked($0) } }
        guard !batch.isEmpty else { return [] }
        var history = batch.first?.offset == records.first?.offset ? history : FailureHistory()
        let spans = RecordSpans(batch, stage: context.stage.name)
        defer { spans.endUnfinished() }
        var pending = spans.records[...]
        // Whether the first pending record already failed in this call (retried in place since).
        var failedHere = false
        // Set when a failure the whole batch threw proves not an outage: the next pass goes one
        // record at a time, so that only the record that fails is parked or dead-lettered.
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
                guard let message = pending.first, !stopping else { return [] }
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
                    guard await deliver(outputs, for: inputs) else { return [] }
                    delivered.append(contentsOf: inputs)
                    let elapsed = (ContinuousClock.now - started).nanoseconds
                    for _ in inputs { context.metrics.processing.recordNanoseconds(elapsed) }
                    context.metrics.succeeded.increment(by: inputs.count)
                    context.progress.recordSucceeded()
                    spans.delivered(outputs: outputs.map(\.count), attempts: history.attempts + 1)
                    history = FailureHistory()
                    failedHere = false
                    endRetry()
                    pending = pending.dropFirst(inputs.count)
                    index += inputs.count
                case .failure(let error):
                    var failure = FailureClassification(error)
                    let now = Date()
                    let decision: FailureDecision
                    if failure.isDeferral {
                        // Not a failure: the record waits for something of its own, aside when there is room.
                        decision = parking.withLock { $0.canPark } ? .park : .retryInPlace
                    } else {
                        let previousFailure = history.lastFailure
                        history.attempts += 1
                        history.firstFailureDate = history.firstFailureDate ?? now
                        history.firstFailure = history.firstFailure ?? .now
                        history.lastFailure = .now
                        decision = decide(
                            failure, history: history, previousFailure: previousFailure, failedHere: failedHere,
                            wholeBatch: batchThrew && pending.count > 1)
                    }
                    switch decision {
                    case .retryInPlace, .confirmInPlace, .isolate:
                        // The whole batch threw: the next pass finds the record whose failure it is.
                        if case .isolate = decision { isolate = true }
                        spans.retrying(error, code: "\(failure.code)", attempt: history.attempts)
                        reportDelivered()
                        var delayAfter = history.attempts
                        if case .confirmInPlace = decision { delayAfter = 1 }
                        guard await backoff(message, failure: failure, attempt: delayAfter) else { return [] }
                        failedHere = true
                        // A transient failure ends this pass over the results: retry from that record.
                        break passOverResults
                    case .park:
                        park(batch[spans.firstPending], after: error, failure: failure, history: history, spans: spans)
                        return Array(batch[spans.firstPending...])
                    case .deadLetter(let final):
                        failure = final
                    }
                    let letter = DeadLetterHeader.record(
                        for: message, topic: context.configuration.deadLetterTopic, stage: context.stage.name,
                        failure: failure, attempts: history.attempts, firstFailure: history.firstFailureDate ?? now, lastFailure: now)
                    context.logger.warning(
                        "record dead-lettered",
                        metadata: log(message).merging([
                            LogKey.errorCode: "\(failure.code)", LogKey.errorMessage: "\(failure.message)",
                        ]) { a, _ in a })
                    guard await deliver([letter], for: message, deadLetter: true) else { return [] }
                    context.metrics.deadLettered(code: failure.code)
                    spans.deadLettered(code: "\(failure.code)", attempts: history.attempts)
                    history = FailureHistory()
                    endRetry()
                    pending = pending.dropFirst()
                    index += 1
                }
            }
        }
        return []
    }

    enum FailureDecision {
        /// Wait, then try again; the partition is paused meanwhile.
        case retryInPlace
        /// Wait the shortest delay and try again in place: a parked record reached the retry cap,
        /// and only a failure right after one more attempt tells its own failure from an outage.
        case confirmInPlace
        /// The whole batch threw: retry one record at a time, to find whose failure it is.
        case isolate
        /// Set the record aside; the partition moves on.
        case park
        case deadLetter(FailureClassification)
    }

    /// What to do with a record that failed (`history` counts this failure). A transient failure is
    /// the record's own, not an outage, when another record succeeded after its previous failure; a
    /// failure of its own is parked while there is room, and dead-lettered after the retry cap.
    private func decide(
        _ failure: FailureClassification, history: FailureHistory, previousFailure: ContinuousClock.Instant?, failedHere: Bool,
        wholeBatch: Bool
    ) -> FailureDecision {
        guard failure.isTransient else { return .deadLetter(failure) }
        let own = previousFailure.map { context.progress.succeeded(after: $0) } == true
        guard own else { return .retryInPlace }
        if wholeBatch { return .isolate }
        let since = history.firstFailure ?? .now
        if context.configuration.retry.capReached(attempts: history.attempts, since: since) {
            // A parked record's previous failure is long past: others succeeding since then says
            // little about now (an outage may have begun).
            guard failedHere else { return .confirmInPlace }
            return .deadLetter(failure.capped(attempts: history.attempts, over: .now - since))
        }
        return parking.withLock { $0.canPark } ? .park : .retryInPlace
    }

    /// Sets `message` (as it came from the broker) aside until its next attempt is due.
    private func park(
        _ message: KafkaMessage, after error: any Error, failure: FailureClassification, history: FailureHistory, spans: RecordSpans
    ) {
        let delay = context.configuration.retry.delay(afterAttempt: history.attempts, retryAfter: failure.retryAfter)
        parking.withLock { $0.park(message, history: history, due: .now + delay) }
        context.metrics.parked.increment()
        spans.parked(error, code: "\(failure.code)", attempt: history.attempts)
        endRetry()
        let text: Logger.Message =
            failure.isDeferral
            ? "record set aside until its wait is over; its partition moves on" : "record parked after a failure of its own; its partition moves on"
        logWait(text, message, failure, history.attempts, delay)
    }

    /// Logs a wait before `message`'s next attempt.
    private func logWait(_ text: Logger.Message, _ message: KafkaMessage, _ failure: FailureClassification, _ attempt: Int, _ delay: Duration) {
        context.logger.info(
            text,
            metadata: log(message).merging([
                LogKey.errorCode: "\(failure.code)", LogKey.errorMessage: "\(failure.message)", LogKey.attempt: "\(attempt)",
                LogKey.retryDelay: "\(delay.milliseconds)",
            ]) { a, _ in a })
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

    /// Marks the input finished, so the consumer commits past it, or up to the lowest parked record.
    private func storeOffset(_ message: KafkaMessage) {
        storeOffset(parking.withLock { $0.finished(message.offset) })
    }

    private func storeOffset(_ next: Int64?) {
        guard let next else { return }
        do {
            try context.consumer.storeOffset(partition, nextOffset: next)
        } catch {
            // The partition was revoked meanwhile: its next owner redoes from its committed offset.
            context.logger.debug("offset not stored", error: error, metadata: [LogKey.partition: "\(partition)", LogKey.offset: "\(next)"])
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
        logWait("transient failure; retrying in place", message, failure, attempt, delay)
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
