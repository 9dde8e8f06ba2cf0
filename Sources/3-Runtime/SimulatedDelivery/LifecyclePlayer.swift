import AppStore
import AsyncHTTPClient
import Foundation
import JSONCoding
import NIOCore
import NIOHTTP1
import SimulatedCustomers
import Synchronization

/// Plays simulated customers like Apple: applies each lifecycle step to the records in time order,
/// signs the notification the step causes, and delivers it to the webhook (`POST /v2/notifications`)
/// with Apple's retries — and, on request, with duplicates, delays, reordering and losses. App
/// uploads go to `POST /v1/transactions`, StoreKit 1 receipts to `POST /v1/receipts`.
public final class LifecyclePlayer: Sendable {
    public let records: any LifecycleRecords
    /// The webhook's base URL, e.g. `http://127.0.0.1:8080` (ingest or the gateway in front of it).
    public let webhook: String
    public let options: DeliveryOptions
    public let seed: UInt64
    private let client: HTTPClient
    private let report = Mutex(PlaybackReport())

    public init(records: any LifecycleRecords, webhook: String, options: DeliveryOptions, seed: UInt64, client: HTTPClient) {
        self.records = records
        self.webhook = webhook.hasSuffix("/") ? String(webhook.dropLast()) : webhook
        self.options = options
        self.seed = seed
        self.client = client
    }

    /// One notification on its way, with the fate chosen for it up front (so a seed replays alike).
    struct Delivery: Sendable {
        var notificationUUID: String
        var body: ByteBuffer
        var delay: Duration
        var dropped: Bool
        var duplicateAfter: Duration?
    }

    enum Job: Sendable {
        case notification(Delivery)
        case upload(path: String, body: ByteBuffer, transactionId: String)
    }

    /// One request the player would send, made ahead of time.
    public struct PreparedRequest: Sendable {
        /// `/v2/notifications` (Apple's notification), `/v1/transactions` or `/v1/receipts` (the app's upload).
        public var path: String
        /// The JSON body, as ``play(_:)`` would post it.
        public var body: ByteBuffer
    }

    /// Every customer's steps in the order they are played: by time, then customer, then step.
    static func orderedSteps(_ customers: [SimulatedCustomer]) -> [(SimulatedCustomer, LifecycleStep)] {
        customers.flatMap { customer in customer.steps.enumerated().map { (customer, $0.offset, $0.element) } }
            .sorted { ($0.2.time, $0.0.index, $0.1) < ($1.2.time, $1.0.index, $1.1) }
            .map { ($0.0, $0.2) }
    }

    static func notificationBody(_ signedPayload: String) throws -> ByteBuffer {
        ByteBuffer(bytes: try StreamingJSONEncoder.encode(["signedPayload": signedPayload]))
    }

    /// The path and body of an app's upload at `time`: the signed transaction, or an app receipt listing it.
    func uploadRequest(_ upload: UploadSpec, at time: Date) async throws -> (path: String, body: ByteBuffer) {
        let token = upload.appAccountToken.uuidString.lowercased()
        switch upload.kind {
        case .signedTransaction:
            let signed = try await records.signedTransaction(upload.transactionId, signedAt: time)
            return ("/v1/transactions", ByteBuffer(bytes: try StreamingJSONEncoder.encode(["signedTransaction": signed, "appAccountToken": token])))
        case .appReceipt:
            let receipt = try await records.appReceipt(upload.transactionId)
            return ("/v1/receipts", ByteBuffer(bytes: try StreamingJSONEncoder.encode(["appReceipt": receipt, "appAccountToken": token])))
        }
    }

    /// Applies every customer's steps to the records and signs what they cause, in the order
    /// ``play(_:)`` would, but sends nothing: the requests come back in that order, without
    /// duplicates, delays, reordering or losses, for a load generator to post as fast as the webhook
    /// takes them (signing in the player would otherwise cap what it offers).
    public func prepare(_ customers: [SimulatedCustomer]) async throws -> [PreparedRequest] {
        var requests: [PreparedRequest] = []
        for (customer, step) in Self.orderedSteps(customers) {
            try await records.apply(step.mutations, customerID: customer.customer.uuidString.lowercased())
            report.withLock { $0.steps += 1 }
            if let spec = step.notification {
                let (_, signedPayload) = try await records.sign(spec, signedAt: step.time)
                requests.append(PreparedRequest(path: "/v2/notifications", body: try Self.notificationBody(signedPayload)))
                report.withLock { $0.notifications += 1 }
            }
            if let upload = step.upload {
                let (path, body) = try await uploadRequest(upload, at: step.time)
                requests.append(PreparedRequest(path: path, body: body))
            }
        }
        return requests
    }

    /// What was applied and signed so far (``prepare(_:)`` counts steps and notifications).
    public var progress: PlaybackReport { report.withLock { $0 } }

    /// Plays every customer's steps and returns once each delivery succeeded or gave up.
    public func play(_ customers: [SimulatedCustomer]) async throws -> PlaybackReport {
        var random = SplitMix64(seed: seed)
        let steps = Self.orderedSteps(customers)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            var inFlight = 0
            var window: [Job] = []
            func dispatch(_ jobs: [Job]) async throws {
                for job in jobs {
                    if inFlight >= max(1, options.concurrency) {
                        try await group.next()
                        inFlight -= 1
                    }
                    inFlight += 1
                    group.addTask { try await self.run(job) }
                }
            }
            for (number, (customer, step)) in steps.enumerated() {
                if let rate = options.stepsPerSecond, rate > 0 {
                    let due = started + .milliseconds(Int64(Double(number) / rate * 1000))
                    if due > .now { try await Task.sleep(until: due) }
                }
                try await records.apply(step.mutations, customerID: customer.customer.uuidString.lowercased())
                report.withLock { $0.steps += 1 }
                if let spec = step.notification {
                    let (uuid, signedPayload) = try await records.sign(spec, signedAt: step.time)
                    let delivery = Delivery(
                        notificationUUID: uuid, body: try Self.notificationBody(signedPayload),
                        delay: Self.fraction(random.unit(), of: options.maxDelay),
                        dropped: random.unit() < options.dropRate || spec.neverDelivered,
                        duplicateAfter: random.unit() < options.duplicateRate ? Self.fraction(random.unit(), of: options.maxDelay) : nil)
                    report.withLock { $0.notifications += 1 }
                    window.append(.notification(delivery))
                }
                if let upload = step.upload {
                    let (path, body) = try await uploadRequest(upload, at: step.time)
                    window.append(.upload(path: path, body: body, transactionId: upload.transactionId))
                }
                if window.count >= max(1, options.reorderWindow) {
                    window.shuffle(using: &random)
                    try await dispatch(window)
                    window.removeAll()
                }
            }
            window.shuffle(using: &random)
            try await dispatch(window)
            try await group.waitForAll()
        }
        return report.withLock { $0 }
    }

    private func run(_ job: Job) async throws {
        switch job {
        case .notification(let delivery): try await deliver(delivery)
        case .upload(let path, let body, let transactionId): try await upload(path, body, transactionId: transactionId)
        }
    }

    private func deliver(_ delivery: Delivery) async throws {
        if delivery.delay > .zero { try await Task.sleep(for: delivery.delay) }
        if delivery.dropped {
            await records.recordAttempt(notificationUUID: delivery.notificationUUID, result: "NO_RESPONSE", at: Date())
            report.withLock {
                $0.dropped += 1
                $0.lostNotificationUUIDs.append(delivery.notificationUUID)
            }
            return
        }
        var attempt = 0
        while true {
            let result = await post("/v2/notifications", delivery.body)
            await records.recordAttempt(notificationUUID: delivery.notificationUUID, result: result, at: Date())
            if result == "SUCCESS" { break }
            guard attempt < options.retryDelays.count else {
                report.withLock {
                    $0.undelivered += 1
                    $0.lostNotificationUUIDs.append(delivery.notificationUUID)
                }
                return
            }
            report.withLock { $0.retries += 1 }
            try await Task.sleep(for: options.retryDelays[attempt])
            attempt += 1
        }
        report.withLock {
            $0.delivered += 1
            $0.deliveredNotificationUUIDs.append(delivery.notificationUUID)
        }
        if let after = delivery.duplicateAfter {
            if after > .zero { try await Task.sleep(for: after) }
            if await post("/v2/notifications", delivery.body) == "SUCCESS" { report.withLock { $0.duplicates += 1 } }
        }
    }

    /// An app upload, retried like an app would (a few times, a second apart).
    private func upload(_ path: String, _ body: ByteBuffer, transactionId: String) async throws {
        for _ in 0..<5 {
            if await post(path, body) == "SUCCESS" {
                report.withLock {
                    $0.uploads += 1
                    $0.uploadedTransactionIds.append(transactionId)
                }
                return
            }
            try await Task.sleep(for: .seconds(1))
        }
    }

    /// One POST; the result in Apple's `sendAttemptResult` words.
    private func post(_ path: String, _ body: ByteBuffer) async -> String {
        var request = HTTPClientRequest(url: webhook + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        do {
            let response = try await client.execute(request, timeout: .milliseconds(options.timeout.milliseconds))
            _ = try? await response.body.collect(upTo: 1 << 20)
            return (200...206).contains(response.status.code) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return "TIMED_OUT"
        } catch {
            return "NO_RESPONSE"
        }
    }

    static func fraction(_ unit: Double, of duration: Duration) -> Duration {
        .milliseconds(Int64(unit * Double(duration.milliseconds)))
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
