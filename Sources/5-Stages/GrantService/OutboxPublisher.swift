import EntitlementStore
import EnvironmentSettings
import EventLoopTimers
import Foundation
import KafkaClient
import LogKeys
import Logging
import PipelineRecords
import PipelineTracing
import ServiceLifecycle
import StageRuntime
import Synchronization
import Tracing

/// Publishes committed entitlement changes from the outbox to the changes topic, keyed by customer,
/// with the customer's sequence number in the body and the `seq` header, and deletes them from the
/// outbox only after the broker acknowledged them. A crash in between republishes them: consumers see
/// every change at least once and drop repeats by (customer, seq). An `EXTERNAL_PURCHASE_TOKEN`
/// names no customer: it goes out in the same rounds, without `seq`, dropped again by its `cause.eventKey`.
public final class OutboxPublisher: Service, Sendable {
    let store: EntitlementStore
    let producer: KafkaProducer
    let topic: String
    let pollInterval: Duration
    /// How long a round waits, once woken, for the commits that follow the one that woke it.
    let gatherWindow: Duration
    let batchSize: Int
    let logger: Logger
    private let wake = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let pending = Atomic<Bool>(false)
    private let published = Atomic<Int>(0)

    public init(
        store: EntitlementStore, producer: KafkaProducer, topic: String, pollInterval: Duration,
        gatherWindow: Duration = GrantConfiguration.outboxGather.defaultValue,
        batchSize: Int, logger: Logger
    ) {
        self.store = store
        self.producer = producer
        self.topic = topic
        self.pollInterval = pollInterval
        self.gatherWindow = gatherWindow
        self.batchSize = batchSize
        self.logger = logger
    }

    /// How many changes this process published.
    public var publishedCount: Int { published.load(ordering: .relaxed) }

    /// Wakes the publisher now (called after a commit that wrote outbox rows).
    public func notify() {
        pending.store(true, ordering: .relaxed)
        resumeWaiter()
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.loop()
        }
    }

    private func loop() async {
        var failures = 0
        var backlogReadAt: ContinuousClock.Instant?
        while !Task.isCancelled {
            var roundFoundNothing = false
            // The commits that woke us before this round are published by it: only those after
            // it began call for another (without this, every round was followed by an empty one).
            pending.store(false, ordering: .relaxed)
            do {
                let count = try await store.publishOutbox(limit: batchSize) { entries in
                    try await self.send(entries)
                }
                failures = 0
                roundFoundNothing = count == 0
                if let count, count > 0 {
                    published.add(count, ordering: .relaxed)
                    // A full round may have left more behind; a partial one took everything
                    // committed before it began, and a commit since then has woken us.
                    if count == batchSize {
                        // Draining a backlog: report it about once a second, not every round.
                        if backlogReadAt.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
                            await reportBacklog()
                            backlogReadAt = .now
                        }
                        continue
                    }
                }
            } catch {
                failures += 1
                let classified = StoreError.classify(error)
                logger.warning(
                    "publishing the outbox failed; retrying",
                    metadata: [
                        LogKey.errorCode: "\(classified.code)", LogKey.errorMessage: "\(classified.message)", LogKey.attempt: "\(failures)",
                    ])
                try? await Task.sleep(for: .milliseconds(min(100 << min(failures, 8), 10_000)))
                continue
            }
            // The backlog query counts every unpublished row: while commits keep waking us (a
            // replay) it ran several times a second over thousands of rows, so then it runs at most
            // once a second; a round that found nothing reports at once (the gauges go to 0).
            if roundFoundNothing || backlogReadAt.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
                await reportBacklog()
                backlogReadAt = .now
            }
            await waitForWork()
            // Woken by a commit (or the poll interval): a round per commit cost four round trips to
            // Postgres and a produce each, so the commits of the next few milliseconds share this one.
            if gatherWindow > .zero { try? await EventLoopTimer.sleep(for: gatherWindow) }
        }
    }

    /// Updates `outbox_unpublished_rows` and `outbox_oldest_unpublished_age_seconds` (when a round
    /// found nothing to publish, and otherwise about once a second while there is work). A failed read
    /// leaves them as they were: the age then stops rising, but the failing rounds show in the log
    /// and in the database's own alerts.
    private func reportBacklog() async {
        do {
            GrantMetrics.outbox(try await store.outboxBacklog())
        } catch {
            logger.debug("reading the outbox backlog failed", metadata: [LogKey.errorCode: "\(error.code)"])
        }
    }

    /// Waits for a commit's ``notify()``, at most the poll interval (an event loop's timer: a
    /// sleeping task's woke a Dispatch thread for every round, long after the round it bounded).
    private func waitForWork() async {
        if pending.exchange(false, ordering: .relaxed) { return }
        let timer = EventLoopTimer.after(pollInterval) { self.resumeWaiter() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = wake.withLock { slot -> Bool in
                    slot?.resume()
                    slot = c
                    return pending.load(ordering: .relaxed) || Task.isCancelled
                }
                if resumeNow { resumeWaiter() }
            }
        } onCancel: {
            resumeWaiter()
        }
        timer.cancel()
        _ = pending.exchange(false, ordering: .relaxed)
    }

    private func resumeWaiter() {
        wake.withLock { c in
            c?.resume()
            c = nil
        }
    }

    /// Sends a round's change events, each in a producer span that continues the trace of the record
    /// that caused it (kept in the outbox row), its context in the event's headers. With tracing off
    /// the kept `traceparent` is carried as it is.
    private func send(_ entries: [OutboxEntry]) async throws {
        let tracer = InstrumentationSystem.tracer
        var spans: [any Span] = []
        var messages: [KafkaOutgoingMessage] = []
        spans.reserveCapacity(entries.count)
        messages.reserveCapacity(entries.count)
        for entry in entries {
            let kept = entry.traceContext.map { [KafkaHeader(key: TraceHeader.traceparent, string: $0)] } ?? []
            var parent = ServiceContext.topLevel
            tracer.extract(kept, into: &parent, using: KafkaHeadersExtractor())
            let span = tracer.startSpan(SpanName.send(topic), context: parent, ofKind: .producer)
            var message = message(entry)
            if span.isRecording {
                span.updateAttributes { a in
                    a[SpanAttributeName.messagingSystem] = "kafka"
                    a[SpanAttributeName.messagingOperationType] = "send"
                    a[SpanAttributeName.messagingDestination] = topic
                    a[SpanAttributeName.kafkaKey] = entry.key
                }
            }
            var injected: [KafkaHeader] = []
            tracer.inject(span.context, into: &injected, using: KafkaHeadersInjector())
            message.headers.append(contentsOf: injected.isEmpty ? kept : injected)
            spans.append(span)
            messages.append(message)
        }
        do {
            _ = try await producer.sendAll(messages)
        } catch {
            for span in spans {
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error))
                span.end()
            }
            throw error
        }
        for span in spans { span.end() }
    }

    private func message(_ entry: OutboxEntry) -> KafkaOutgoingMessage {
        var headers = [
            KafkaHeader(key: PipelineHeader.schema, string: ChangeEvent.schemaName),
            KafkaHeader(key: PipelineHeader.contentType, string: "application/json"),
        ]
        if case .customer(let customerId, let seq) = entry.subject {
            headers.insert(
                contentsOf: [
                    KafkaHeader(key: ChangeHeader.seq, string: String(seq)),
                    KafkaHeader(key: ChangeHeader.customerId, string: customerId.uuidString.lowercased()),
                ], at: 0)
        }
        return KafkaOutgoingMessage(topic: topic, key: entry.key, value: Array(entry.body.utf8), headers: headers)
    }
}
