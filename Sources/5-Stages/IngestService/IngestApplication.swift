import Foundation
import HTTPTypes
import Hummingbird
import JSONCoding
import KafkaClient
import LogKeys
import Logging
import NIOCore
import PipelineMessages
import PipelineRecords
import PipelineTracing
import Prometheus
import StageRuntime
import Synchronization
import Tracing

/// The webhook front door. `POST /v2/notifications` (Apple) and `POST /v1/transactions` (the app)
/// write a body rebuilt from the request's known fields (``RawRecord``; the JWS byte for byte)
/// to the raw topic, and answer 200 only after the broker acknowledged it. If it did not within
/// ``IngestConfiguration/ackTimeout``, the answer is 503 and Apple delivers again later. An app
/// upload is stored only once its credential holds (``UploadAuthenticator``).
public enum IngestApplication {
    /// Builds the HTTP application. Add `producer` to the same `ServiceGroup` before it (or run the
    /// returned application's services), so it flushes after the server stops.
    /// - Parameter authenticator: checks uploads; made from the configuration when nil.
    public static func build(
        configuration: IngestConfiguration, producer: KafkaProducer, registry: PrometheusCollectorRegistry?, logger: Logger,
        authenticator: UploadAuthenticator? = nil
    ) -> some ApplicationProtocol {
        let handler = IngestHandler(configuration: configuration, producer: producer, logger: logger)
        let authenticator = authenticator ?? UploadAuthenticator(settings: configuration.uploadAuthentication, logger: logger)
        let limit = configuration.maxJWSBytes
        let quota = UploadQuota(settings: .init(perMinute: configuration.userUploadsPerMinute, burst: configuration.userUploadBurst))
        let router = Router()
        // Hummingbird's metrics per route, method and answered status (a thrown `IngestError`
        // counts under its own status, and in `hb_request_errors`), on the two ingest routes only:
        // scrapes and probes are not webhook traffic.
        // A server span per request (Hummingbird's, a child of a valid incoming `traceparent`),
        // whose context the raw record carries on (a no-op unless tracing is on).
        let ingestRoutes = router.group().add(middleware: MetricsMiddleware()).add(middleware: TracingMiddleware())
        ingestRoutes.post("/v2/notifications") { request, context in
            try await handler.accept(request) { body in
                let accepted = try RequestValidation.notification(body, maxJWSBytes: limit)
                return IngestHandler.Record(
                    source: PipelineHeader.Source.appleWebhook, body: RawRecord.notificationBody(signedPayload: accepted.signedPayload))
            }
        }
        ingestRoutes.post("/v1/transactions") { request, context in
            try await handler.accept(request) { body in
                // Credentials first: an unauthenticated client learns nothing about its body.
                let credential = try await authenticator.authenticate(headers: request.headers, body: body)
                try quota.take(for: credential, identity: nil)
                let accepted = try RequestValidation.transaction(body, maxJWSBytes: configuration.maxUploadJWSBytes)
                // The user a backend's HMAC names is counted before the chain pre-check: junk a
                // backend relays for one user costs that user's quota too.
                let identity = try UploadIdentity.resolve(credential: credential, accepted: accepted.hints)
                try quota.take(for: credential, identity: identity)
                try configuration.uploadPrecheck?.check(accepted.signedTransaction, name: "signedTransaction")
                return IngestHandler.Record(
                    source: PipelineHeader.Source.appUpload,
                    body: RawRecord.uploadBody(
                        signedTransaction: accepted.signedTransaction, appAccountToken: identity.customer?.uuidString.lowercased(),
                        userId: identity.userId, authentication: credential.mode.recorded))
            }
        }
        ingestRoutes.post("/v1/receipts") { request, context in
            try await handler.accept(request) { body in
                // Authenticated exactly like an upload; the receipt only names what enrich looks up.
                let credential = try await authenticator.authenticate(headers: request.headers, body: body)
                try quota.take(for: credential, identity: nil)
                let accepted = try RequestValidation.receipt(body)
                let identity = try UploadIdentity.resolve(credential: credential, accepted: accepted.hints)
                try quota.take(for: credential, identity: identity)
                return IngestHandler.Record(
                    source: PipelineHeader.Source.appReceipt,
                    body: RawRecord.receiptBody(
                        accepted.reference, appAccountToken: identity.customer?.uuidString.lowercased(), userId: identity.userId,
                        authentication: credential.mode.recorded))
            }
        }
        if let offerSigning = configuration.offerSigning, authenticator.settings.mode != .none {
            let offers = OfferSignatureRoute(settings: offerSigning, authenticator: authenticator, logger: logger)
            ingestRoutes.post("/v1/offers/signature") { request, context in
                try await offers.respond(to: request)
            }
        }
        if case .jwt = authenticator.settings {
            // The app asks which appAccountToken to set at purchase: its user's own customer.
            router.get("/v1/customer") { request, context in
                let credential = try await authenticator.authenticate(headers: request.headers, body: [])
                guard let user = credential.tokenUser else { preconditionFailure("a jwt credential names its user") }
                let answer = try StreamingJSONEncoder.encode(
                    CustomerAnswer(customerId: CustomerIdentity.customer(forUser: user).uuidString.lowercased(), userId: user))
                return Response(
                    status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                    body: .init(byteBuffer: ByteBuffer(bytes: answer)))
            }
        }
        if let registry {
            ProbeRoutes.add(to: router, registry: registry, stage: "ingest") { handler.isReady }
        }
        return Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: .nanoseconds(configuration.idleTimeout.nanoseconds))),
            configuration: .init(address: .hostname(configuration.httpHost, port: configuration.httpPort), serverName: nil),
            logger: logger)
    }
}

/// `GET /v1/customer`'s answer: the user's own customer, the `appAccountToken` to set at purchase.
struct CustomerAnswer: Encodable {
    var customerId: String
    var userId: String
}

/// Validates, stores and answers one request.
final class IngestHandler: Sendable {
    let configuration: IngestConfiguration
    let producer: KafkaProducer
    let logger: Logger
    /// Consecutive broker failures and when the last one happened: ingest reports not ready
    /// while the broker refuses writes, and ready again 5 s after the last failure (so that a
    /// load balancer sends traffic that can prove the broker is back).
    private let consecutiveFailures = Atomic<Int>(0)
    private let lastFailure = Mutex<ContinuousClock.Instant?>(nil)

    init(configuration: IngestConfiguration, producer: KafkaProducer, logger: Logger) {
        self.configuration = configuration
        self.producer = producer
        self.logger = logger
    }

    var isReady: Bool {
        guard consecutiveFailures.load(ordering: .relaxed) >= 3, let last = lastFailure.withLock({ $0 }) else { return true }
        return ContinuousClock.now - last > .seconds(5)
    }

    private func recordFailure() {
        consecutiveFailures.add(1, ordering: .relaxed)
        lastFailure.withLock { $0 = .now }
    }

    /// What is written for an accepted request.
    struct Record {
        var source: String
        var body: [UInt8]
    }

    func accept(
        _ request: Request, prepare: ([UInt8]) async throws -> Record
    ) async throws -> Response {
        let requestID = RequestID.accepted(request.headers[.requestID])
        do {
            return try await store(request, requestID: requestID, prepare: prepare)
        } catch let error as IngestError {
            if error.status == .serviceUnavailable {
                logger.warning("request not stored", metadata: [LogKey.requestID: "\(requestID)", LogKey.errorCode: "\(error.code)"])
            } else {
                logger.debug("request refused", metadata: [LogKey.requestID: "\(requestID)", LogKey.errorCode: "\(error.code)"])
            }
            throw error.answering(requestID)
        }
    }

    private func store(
        _ request: Request, requestID: String, prepare: ([UInt8]) async throws -> Record
    ) async throws -> Response {
        if let type = request.headers[.contentType], !Self.isJSON(type) { throw IngestError.unsupportedMediaType(type) }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch {
            throw IngestError.bodyTooLarge(limit: configuration.maxBodyBytes)
        }
        let record = try await prepare(Array(buffer.readableBytesView))
        let message = RawMessage.make(
            body: record.body, topic: configuration.rawTopic, source: record.source, requestID: requestID,
            traceContext: Self.traceContext(of: request))

        let report = try await sendWithDeadline(message)
        consecutiveFailures.store(0, ordering: .relaxed)
        let answer = try StreamingJSONEncoder.encode(
            Answer(offset: Int(report.offset), partition: Int(report.partition), requestId: requestID, status: "accepted"))
        return Response(
            status: .ok, headers: [.contentType: "application/json", .requestID: requestID],
            body: .init(byteBuffer: ByteBuffer(bytes: answer)))
    }

    /// The 200 answer's body, written by the project's one-pass writer (no Foundation encoder per
    /// request). Members in alphabetical order, as the answer has always been written.
    private struct Answer: Encodable {
        var offset: Int
        var partition: Int
        var requestId: String
        var status: String
    }

    /// Sends and waits for the acknowledgement, at most the configured deadline. librdkafka's own
    /// delivery timeout is the same deadline, so a record given up on here is not written later.
    private func sendWithDeadline(_ message: KafkaOutgoingMessage) async throws -> KafkaDeliveryReport {
        let timeout = configuration.ackTimeout
        let outcome = await producer.send(message, deadline: timeout)
        switch outcome {
        case .success(let report):
            return report
        case .failure(let error):
            recordFailure()
            logger.warning("broker refused the record", error: error)
            throw IngestError.brokerUnavailable()
        case nil:
            recordFailure()
            logger.warning("no acknowledgement within the deadline", metadata: [LogKey.httpTimeout: "\(timeout)"])
            throw IngestError.brokerUnavailable()
        }
    }

    /// The trace context the raw record carries: the request's server span when tracing is on (a
    /// child of the request's own `traceparent` when W3C allows continuing it, else a new trace);
    /// with tracing off, the request's `traceparent` and `tracestate` as they came, when valid.
    static func traceContext(of request: Request) -> [KafkaHeader] {
        var headers: [KafkaHeader] = []
        if let span = ServiceContext.current {
            InstrumentationSystem.tracer.inject(span, into: &headers, using: KafkaHeadersInjector())
            if !headers.isEmpty { return headers }
        }
        guard let parent = request.headers[.traceparent].flatMap(TraceHeader.validTraceparent) else { return [] }
        headers.append(KafkaHeader(key: TraceHeader.traceparent, string: parent))
        if let state = request.headers[.tracestate].flatMap(TraceHeader.validTracestate) {
            headers.append(KafkaHeader(key: TraceHeader.tracestate, string: state))
        }
        return headers
    }

    static func isJSON(_ contentType: String) -> Bool {
        let media = contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return media == "application/json" || media.hasSuffix("+json")
    }
}

/// Resumes a continuation with whichever of two racing tasks finishes first.
extension HTTPField.Name {
    static let requestID = Self("X-Request-Id")!
    static let traceparent = Self(TraceHeader.traceparent)!
    static let tracestate = Self(TraceHeader.tracestate)!
}

extension UploadAuthMode {
    /// How the raw record says the upload was authenticated (`userAuthentication`).
    var recorded: UploadAuthentication {
        switch self {
        case .jwt: .jwt
        case .hmac: .hmac
        case .none: .open
        }
    }
}
