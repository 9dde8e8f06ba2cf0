import CRdKafka
import EventLoopTimers
import Foundation
import LogKeys
import Logging
import ServiceLifecycle
import Synchronization

/// An idempotent (`acks=all`) producer whose ``send(_:)`` returns only once the broker
/// acknowledged the record, or throws a ``KafkaError``.
///
/// It watches its own health: after a fatal error, or a delivery failure that shows the
/// idempotent session is stuck (a broker restart makes it loop on "unknown producer id"), the
/// next ``send(_:)`` replaces the librdkafka handle, so callers recover without a process restart.
///
/// Run it in a `ServiceGroup` (it flushes on graceful shutdown), or call ``close()`` yourself.
public final class KafkaProducer: Service, Sendable {
    private struct State {
        var handle: ProducerHandle?
        var lastReplacement: ContinuousClock.Instant
        var replacements: Int
    }

    private let configuration: KafkaProducerConfiguration
    private let logger: Logger
    private let state: Mutex<State>

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        self.configuration = configuration
        self.logger = logger
        let handle = try ProducerHandle(configuration: configuration, logger: logger)
        state = Mutex(State(handle: handle, lastReplacement: .now, replacements: 0))
    }

    /// How many times the handle was replaced after it went bad.
    public var replacements: Int { state.withLock { $0.replacements } }

    /// Produces one record and waits for the broker's acknowledgement.
    /// - Throws: ``KafkaError`` with ``KafkaError/Code-swift.struct/deliveryFailed`` when the broker
    ///   did not acknowledge within the delivery timeout, ``KafkaError/Code-swift.struct/queueFull``
    ///   when the local queue is full, ``KafkaError/Code-swift.struct/closed`` after ``close()``.
    public func send(_ message: KafkaOutgoingMessage) async throws -> KafkaDeliveryReport {
        try await withCheckedThrowingContinuation { continuation in
            send(message) { continuation.resume(with: $0) }
        }
    }

    /// Produces one record and calls `completion` once, on the producer's polling thread, with
    /// the broker's acknowledgement or the failure. For callers that race the acknowledgement
    /// against a deadline of their own without spawning tasks; keep `completion` short.
    public func send(_ message: KafkaOutgoingMessage, completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void) {
        do {
            try currentHandle().produce(message, promise: DeliveryPromise(completion))
        } catch {
            completion(.failure(error))
        }
    }

    /// Produces one record and waits for the acknowledgement at most `deadline`, without a task
    /// per record: `nil` when the deadline came first. A record given up on is not written later
    /// only if the producer's delivery timeout is no longer than `deadline` (ingest sets both alike).
    public func send(_ message: KafkaOutgoingMessage, deadline: Duration) async -> Result<KafkaDeliveryReport, KafkaError>? {
        await withCheckedContinuation { continuation in
            let once = ResumeOnce(continuation)
            // An event loop's timer, cancelled with the acknowledgement: a Dispatch timer here woke
            // a thread for every record when it fired, seconds after the record was acknowledged.
            once.attach(EventLoopTimer.after(deadline) { once.resume(returning: nil) })
            send(message) { once.resume(returning: $0) }
        }
    }

    /// Produces several records and waits until every one is acknowledged; throws the first
    /// failure (the others may still have been written: the caller retries all of them).
    public func sendAll(_ messages: [KafkaOutgoingMessage]) async throws -> [KafkaDeliveryReport] {
        if messages.count == 1 { return [try await send(messages[0])] }
        guard !messages.isEmpty else { return [] }
        return try await withCheckedThrowingContinuation { continuation in
            let collector = ReportCollector(count: messages.count, continuation: continuation)
            for (i, m) in messages.enumerated() { send(m) { collector.complete(i, $0) } }
        }
    }

    private func currentHandle() throws(KafkaError) -> ProducerHandle {
        let (handle, retired): (ProducerHandle, ProducerHandle?) = try state.withLock { (s) throws(KafkaError) in
            guard let current = s.handle else {
                throw KafkaError(code: .closed, reason: "the producer is closed")
            }
            guard current.isPoisoned, ContinuousClock.now - s.lastReplacement > .milliseconds(500) else {
                return (current, nil)
            }
            let fresh = try ProducerHandle(configuration: configuration, logger: logger)
            s.handle = fresh
            s.lastReplacement = .now
            s.replacements += 1
            return (fresh, current)
        }
        if let retired {
            logger.warning("replacing a stuck or failed producer handle", metadata: [LogKey.kafkaReason: "\(retired.poisonReason ?? "")"])
            Task.detached { await Blocking.run { retired.close(flushTimeout: .seconds(2)) } }
        }
        return handle
    }

    /// Waits for queued records to be delivered, at most `timeout`.
    public func flush(timeout: Duration) async {
        guard let handle = state.withLock({ $0.handle }) else { return }
        await Blocking.run { handle.flush(timeout: timeout) }
    }

    /// Flushes (bounded by the delivery timeout), fails what is left, and frees the handle.
    public func close() async {
        guard
            let handle = state.withLock({ s in
                defer { s.handle = nil }
                return s.handle
            })
        else { return }
        let timeout = configuration.deliveryTimeout
        await Blocking.run { handle.close(flushTimeout: timeout) }
    }

    /// Serves until graceful shutdown, then flushes and closes.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}

/// The continuation of one ``KafkaProducer/send(_:)``, passed to librdkafka as the message opaque.
final class DeliveryPromise: Sendable {
    private let completion: @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    init(_ completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void) { self.completion = completion }
    func succeed(_ report: KafkaDeliveryReport) { completion(.success(report)) }
    func fail(_ error: KafkaError) { completion(.failure(error)) }
}

/// Gathers the reports of ``KafkaProducer/sendAll(_:)`` and resumes its caller once: with all of
/// them, or with the first failure after every record has an answer.
private final class ReportCollector: Sendable {
    private struct State {
        var reports: [KafkaDeliveryReport?]
        var pending: Int
        var failure: KafkaError?
        var continuation: CheckedContinuation<[KafkaDeliveryReport], any Error>?
    }
    private let state: Mutex<State>

    init(count: Int, continuation: CheckedContinuation<[KafkaDeliveryReport], any Error>) {
        state = Mutex(State(reports: Array(repeating: nil, count: count), pending: count, continuation: continuation))
    }

    func complete(_ index: Int, _ result: Result<KafkaDeliveryReport, KafkaError>) {
        let finished = state.withLock { s -> (CheckedContinuation<[KafkaDeliveryReport], any Error>, Result<[KafkaDeliveryReport], any Error>)? in
            switch result {
            case .success(let r): s.reports[index] = r
            case .failure(let e): s.failure = s.failure ?? e
            }
            s.pending -= 1
            guard s.pending == 0, let c = s.continuation else { return nil }
            s.continuation = nil
            if let f = s.failure { return (c, .failure(f)) }
            return (c, .success(s.reports.map { $0! }))
        }
        if let (c, outcome) = finished { c.resume(with: outcome) }
    }
}

/// One librdkafka producer handle and the thread that serves its event queue.
final class ProducerHandle: @unchecked Sendable {
    // Teardown order: the polling thread is stopped before the queue and handle are destroyed.
    private let rk: OpaquePointer
    private let queue: OpaquePointer
    private var poller: PollingThread!
    private let logger: Logger
    private let poisoned = Mutex<String?>(nil)
    private let closed = Atomic<Bool>(false)

    init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        let conf = try RDKafkaConfig.make(configuration.librdkafkaProperties)
        rd_kafka_conf_set_events(conf, Int32(RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR | RD_KAFKA_EVENT_LOG))
        rk = try RDKafkaConfig.newHandle(type: RD_KAFKA_PRODUCER, conf: conf)
        queue = rd_kafka_queue_get_main(rk)
        rd_kafka_set_log_queue(rk, queue)
        self.logger = logger
        poller = PollingThread(name: "kafka-producer") { [self] in self.serve(timeoutMs: 100) }
    }

    var isPoisoned: Bool { poisoned.withLock { $0 != nil } }
    var poisonReason: String? { poisoned.withLock { $0 } }

    private func poison(_ reason: String) {
        poisoned.withLock { if $0 == nil { $0 = reason } }
    }

    func produce(_ message: KafkaOutgoingMessage, promise: DeliveryPromise) {
        let opaque = Unmanaged.passRetained(promise).toOpaque()
        let failure: KafkaError? = message.topic.withCString { topic in
            let headers = rd_kafka_headers_new(message.headers.count)!
            for h in message.headers {
                if let v = h.value {
                    _ = v.withUnsafeBytes { rd_kafka_header_add(headers, h.key, -1, $0.baseAddress, $0.count) }
                } else {
                    _ = rd_kafka_header_add(headers, h.key, -1, nil, 0)
                }
            }
            return message.value.withUnsafeBytes { value in
                withOptionalBytes(message.key) { key in
                    var vus = [rd_kafka_vu_t](repeating: rd_kafka_vu_t(), count: 6)
                    vus[0].vtype = RD_KAFKA_VTYPE_TOPIC
                    vus[0].u.cstr = topic
                    vus[1].vtype = RD_KAFKA_VTYPE_VALUE
                    vus[1].u.mem.ptr = UnsafeMutableRawPointer(mutating: value.baseAddress)
                    vus[1].u.mem.size = value.count
                    vus[2].vtype = RD_KAFKA_VTYPE_KEY
                    vus[2].u.mem.ptr = UnsafeMutableRawPointer(mutating: key?.baseAddress)
                    vus[2].u.mem.size = key?.count ?? 0
                    vus[3].vtype = RD_KAFKA_VTYPE_OPAQUE
                    vus[3].u.ptr = opaque
                    vus[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS
                    vus[4].u.i = RD_KAFKA_MSG_F_COPY
                    vus[5].vtype = RD_KAFKA_VTYPE_HEADERS
                    vus[5].u.headers = headers
                    if let partition = message.partition {
                        var p = rd_kafka_vu_t()
                        p.vtype = RD_KAFKA_VTYPE_PARTITION
                        p.u.i32 = partition
                        vus.append(p)
                    }
                    guard let error = rd_kafka_produceva(rk, &vus, vus.count) else { return nil }
                    rd_kafka_headers_destroy(headers)  // ownership stays with us on failure
                    return KafkaError.rdKafka(.deliveryFailed, taking: error, context: "produce to \(message.topic)")
                }
            }
        }
        if let failure {
            Unmanaged<DeliveryPromise>.fromOpaque(opaque).release()
            if failure.isFatal { poison(failure.reason) }
            promise.fail(failure)
        }
    }

    /// Serves one batch of events: delivery reports complete their promises.
    private func serve(timeoutMs: Int32) {
        guard let event = rd_kafka_queue_poll(queue, timeoutMs) else { return }
        defer { rd_kafka_event_destroy(event) }
        switch Int32(rd_kafka_event_type(event)) {
        case RD_KAFKA_EVENT_DR:
            while let m = rd_kafka_event_message_next(event) {
                let msg = m.pointee
                guard let opaque = msg._private else { continue }
                let promise = Unmanaged<DeliveryPromise>.fromOpaque(opaque).takeRetainedValue()
                if msg.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                    let topic = String(cString: rd_kafka_topic_name(msg.rkt))
                    promise.succeed(KafkaDeliveryReport(topic: topic, partition: msg.partition, offset: msg.offset))
                } else {
                    if RDKafkaErrors.poisonsProducer(msg.err) {
                        poison(String(cString: rd_kafka_err2str(msg.err)))
                    }
                    promise.fail(.rdKafka(.deliveryFailed, msg.err, context: "delivery"))
                }
            }
        case RD_KAFKA_EVENT_ERROR:
            let e = RDKafkaEvents.error(event)
            if e.fatal {
                var buf = [CChar](repeating: 0, count: 512)
                let code = rd_kafka_fatal_error(rk, &buf, buf.count)
                let text = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                poison("fatal \(code.rawValue): \(text)")
                logger.error("producer fatal error", metadata: [LogKey.kafkaError: "\(text)"])
            } else {
                logger.debug("producer error", metadata: [LogKey.kafkaError: "\(e.reason)"])
            }
        case RD_KAFKA_EVENT_LOG:
            RDKafkaEvents.log(event, logger: logger)
        default:
            break
        }
    }

    func flush(timeout: Duration) {
        _ = rd_kafka_flush(rk, Int32(clamping: timeout.milliseconds))
    }

    /// Flushes, purges what could not be delivered (failing its promises), and destroys the handle.
    func close(flushTimeout: Duration) {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = rd_kafka_flush(rk, Int32(clamping: flushTimeout.milliseconds))
        _ = rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT)
        _ = rd_kafka_flush(rk, 1000)
        poller.stop()
        // Deliver whatever reports are still queued so no caller waits forever. After the purge
        // every message has its report; the deadline only guards against librdkafka internals.
        let deadline = ContinuousClock.now + .seconds(5)
        while (rd_kafka_outq_len(rk) > 0 || hasQueuedEvents()) && ContinuousClock.now < deadline {
            serve(timeoutMs: 50)
        }
        rd_kafka_queue_destroy(queue)
        rd_kafka_destroy(rk)
    }

    private func hasQueuedEvents() -> Bool { rd_kafka_queue_length(queue) > 0 }

    deinit {
        if !closed.load(ordering: .acquiring) { close(flushTimeout: .zero) }
    }
}

private func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
    guard let bytes else { return body(nil) }
    return bytes.withUnsafeBytes { body($0) }
}
