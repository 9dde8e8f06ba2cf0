import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import IngestService
import KafkaClient
import Metrics
import NIOCore
import PipelineRecords
import Prometheus
import StageRuntime
import TestSupport
import Testing

/// A JWS-shaped string: three base64url segments. Ingest checks shape only.
func fakeJWS(_ payload: String = #"{"notificationUUID":"\#(UUID().uuidString)"}"#) -> String {
    "\(UploadTokens.base64URL(Data(#"{"alg":"ES256"}"#.utf8))).\(UploadTokens.base64URL(Data(payload.utf8))).c2lnbmF0dXJl"
}

struct ErrorBody: Decodable {
    struct Detail: Decodable {
        let code: String
        let message: String
    }
    let error: Detail
}

/// Expects a JSON error answer with `status` and `code`, and a message.
func expectError(
    _ response: TestResponse, _ status: HTTPResponse.Status, _ code: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(response.status == status, "\(code)", sourceLocation: sourceLocation)
    #expect(response.headers[.contentType] == "application/json", sourceLocation: sourceLocation)
    let decoded = try JSONDecoder().decode(ErrorBody.self, from: Data(response.body.readableBytesView))
    #expect(decoded.error.code == code, sourceLocation: sourceLocation)
    #expect(!decoded.error.message.isEmpty, sourceLocation: sourceLocation)
}

@Suite("ingest answers", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct IngestRouteTests {
    func withIngest(
        ackTimeout: Duration = TestServices.ingestAckTimeout, bootstrap: String = TestServices.bootstrapServers,
        registry: PrometheusCollectorRegistry? = nil, _ body: @Sendable (String, any TestClientProtocol) async throws -> Void
    ) async throws {
        let topic = try await TestServices.makeTopic("raw")
        let config = IngestConfiguration(
            kafka: KafkaClientConfiguration(bootstrapServers: bootstrap), uploadAuthentication: try TestUploads.open(), rawTopic: topic,
            ackTimeout: ackTimeout)
        let producer = try KafkaProducer(configuration: config.producer, logger: TestServices.logger)
        let app = IngestApplication.build(configuration: config, producer: producer, registry: registry, logger: TestServices.logger)
        try await app.test(.router) { client in try await body(topic, client) }
        await producer.close()
    }

    @Test("a connection that sends nothing is closed after INGEST_IDLE_TIMEOUT_MS; one that sends a request is answered")
    func idleConnectionsAreClosed() async throws {
        let topic = try await TestServices.makeTopic("raw")
        let config = IngestConfiguration(
            kafka: KafkaClientConfiguration(bootstrapServers: TestServices.bootstrapServers), uploadAuthentication: try TestUploads.open(),
            rawTopic: topic, idleTimeout: .seconds(1))
        let producer = try KafkaProducer(configuration: config.producer, logger: TestServices.logger)
        let app = IngestApplication.build(configuration: config, producer: producer, registry: nil, logger: TestServices.logger)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            // Reading blocks until the server closes the connection (0 bytes) or 60 s pass (a hang, not a figure).
            let idle = try RawConnection(port: port, receiveTimeoutSeconds: 60)
            #expect(try await idle.readUntilClosed().isEmpty, "ingest closed the idle connection without a word")
            let active = try RawConnection(port: port, receiveTimeoutSeconds: 60)
            try active.send("GET /nothing-here HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(String(decoding: try await active.readUntilClosed(), as: UTF8.self).hasPrefix("HTTP/1.1 404"))
        }
        await producer.close()
    }

    @Test("/metrics counts the answers per route and answered status, refusals included; scrapes and probes are not counted")
    func requestMetrics() async throws {
        let registry = PrometheusCollectorRegistry()
        try await withMetricsFactory(ProcessBootstrap.metricsFactory(registry: registry)) {
            try await withIngest(registry: registry) { _, client in
                let json: HTTPFields = [.contentType: "application/json"]
                let posts: [(String, HTTPFields, String, HTTPResponse.Status)] = [
                    ("/v2/notifications", json, #"{"signedPayload":"\#(fakeJWS())"}"#, .ok),
                    ("/v2/notifications", json, #"{"signedPayload":"\#(fakeJWS())"}"#, .ok),
                    ("/v2/notifications", [.contentType: "text/plain"], #"{"signedPayload":"a.b.c"}"#, .unsupportedMediaType),
                    ("/v1/transactions", json, uploadBody(), .ok),
                    ("/v1/transactions", json, "not json", .badRequest),
                ]
                for (uri, headers, body, status) in posts {
                    try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body)) {
                        #expect($0.status == status, "\(uri) \(body)")
                    }
                }
                try await client.execute(uri: "/ready", method: .get) { #expect($0.status == .ok) }
                // Scraped twice: the second would show the first if scrapes were counted.
                try await client.execute(uri: "/metrics", method: .get) { _ in }
                let scraped = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
                func count(_ name: String, _ labels: [String: String]) -> Double? {
                    let wanted = labels.map { #"\#($0.key)="\#($0.value)""# }
                    let lines = scraped.split(separator: "\n").filter { line in
                        line.hasPrefix(name + "{") && wanted.allSatisfy { line.contains($0) }
                    }
                    return lines.count == 1 ? Double(lines[0].split(separator: " ").last ?? "") : nil
                }
                func requests(_ route: String, _ status: Int) -> Double? {
                    count("hb_requests", ["http_route": route, "http_request_method": "POST", "http_response_status_code": "\(status)"])
                }
                #expect(requests("/v2/notifications", 200) == 2, "\(scraped)")
                #expect(requests("/v2/notifications", 415) == 1)
                #expect(requests("/v1/transactions", 200) == 1)
                #expect(requests("/v1/transactions", 400) == 1)
                #expect(requests("/v1/transactions", 415) == nil)
                #expect(count("hb_request_errors", ["http_route": "/v1/transactions", "error_type": "400"]) == 1)
                #expect(count("http_server_request_duration_count", ["http_route": "/v2/notifications", "http_response_status_code": "200"]) == 2)
                #expect(!scraped.contains(#"http_route="/metrics""#) && !scraped.contains(#"http_route="/ready""#))
            }
        }
    }

    @Test("a notification is stored byte for byte with its headers before 200")
    func acceptsNotification() async throws {
        try await withIngest { topic, client in
            let body = #"{"signedPayload":"\#(fakeJWS())"}"#
            let answer = try await client.execute(
                uri: "/v2/notifications", method: .post,
                headers: [
                    .contentType: "application/json", HTTPField.Name("traceparent")!: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                    HTTPField.Name("X-Request-Id")!: "req-1",
                ],
                body: ByteBuffer(string: body)
            ) { response in
                #expect(response.status == .ok)
                return String(buffer: response.body)
            }
            let stored = try await TopicReader.read(topic) { !$0.isEmpty }
            let record = try #require(stored.first)
            // The answer names where the record was written, members in alphabetical order.
            #expect(answer == #"{"offset":\#(record.offset),"partition":\#(record.partition),"requestId":"req-1","status":"accepted"}"#)
            #expect(record.value == Array(body.utf8))
            #expect(record.headers.string(PipelineHeader.source) == "apple-webhook")
            #expect(record.headers.string(PipelineHeader.requestID) == "req-1")
            #expect(record.headers.string(PipelineHeader.contentType) == "application/json")
            #expect(record.headers.string(PipelineHeader.traceparent) == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
            let ingestedAt = try #require(record.headers.string(PipelineHeader.ingestedAt))
            #expect(try Date(ingestedAt, strategy: .iso8601).timeIntervalSinceNow > -60)
            #expect(record.keyString?.count == 64, "keyed by the body's SHA-256")
        }
    }

    @Test("an open app upload is stored rebuilt, marked none, with source app-upload")
    func acceptsTransaction() async throws {
        try await withIngest { topic, client in
            let jws = fakeJWS()
            let token = UUID().uuidString
            let body = #"{"extra":{"a":1},"userId":"user-42","signedTransaction":"\#(jws)","appAccountToken":"\#(token)","userAuthentication":"jwt"}"#
            try await client.execute(
                uri: "/v1/transactions", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body)
            ) {
                #expect($0.status == .ok)
            }
            let stored = try await TopicReader.read(topic) { !$0.isEmpty }
            #expect(stored.first?.headers.string(PipelineHeader.source) == "app-upload")
            let expected =
                #"{"signedTransaction":"\#(jws)","appAccountToken":"\#(token.lowercased())","userId":"user-42","userAuthentication":"none"}"#
            #expect(
                stored.first?.text == expected, "unknown fields dropped, the customer in its canonical form, the client's userAuthentication replaced"
            )
            #expect(stored.first?.keyString == sha256Hex(expected), "keyed by the stored body's SHA-256")
        }
    }

    /// The answer is bounded by the acknowledgement timeout; a request that hung would end the
    /// suite by its time limit. How long it took depends on the machine's load, so it is not asserted.
    @Test("an unreachable broker gets 503 with a JSON error, not a hung request")
    func brokerUnreachable() async throws {
        try await withIngest(ackTimeout: .milliseconds(800), bootstrap: "127.0.0.1:1") { _, client in
            try await client.execute(
                uri: "/v2/notifications", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"signedPayload":"\#(fakeJWS())"}"#)
            ) { response in
                try expectError(response, .serviceUnavailable, "kafka.broker_unavailable")
            }
        }
    }
}

/// Requests ingest refuses before the broker is involved (400, 413, 415) run without one: the
/// producer points nowhere, so a request that got through would answer 503 after the
/// acknowledgement timeout instead of its refusal, and nothing can be stored.
@Suite("ingest refusals without a broker", .timeLimit(.minutes(15)))
struct IngestRefusalTests {
    @Test("bad requests are refused with a JSON error naming the problem, before the broker")
    func refusals() async throws {
        let big = String(repeating: "A", count: 70_000)
        let upload = String(repeating: "A", count: 17 << 10)
        let cases: [(String, String, [UInt8], HTTPResponse.Status, String)] = [
            ("/v2/notifications", "application/json", Array("not json".utf8), .badRequest, "request.invalid_json"),
            ("/v2/notifications", "application/json", Array("[1,2]".utf8), .badRequest, "request.invalid_json"),
            ("/v2/notifications", "application/json", Array(#"{"payload":"a.b.c"}"#.utf8), .badRequest, "request.missing_field"),
            ("/v2/notifications", "application/json", Array(#"{"signedPayload":42}"#.utf8), .badRequest, "request.missing_field"),
            ("/v2/notifications", "application/json", Array(#"{"signedPayload":"abc.def"}"#.utf8), .badRequest, "request.invalid_jws"),
            ("/v2/notifications", "application/json", Array(#"{"signedPayload":"a.b.c.d"}"#.utf8), .badRequest, "request.invalid_jws"),
            ("/v2/notifications", "application/json", Array(#"{"signedPayload":"a..c"}"#.utf8), .badRequest, "request.invalid_jws"),
            ("/v2/notifications", "application/json", Array(#"{"signedPayload":"a+/.b.c="}"#.utf8), .badRequest, "request.invalid_jws"),
            ("/v2/notifications", "application/json", Array(#"{"signedPayload":"\#(big).b.c"}"#.utf8), .badRequest, "request.jws_too_large"),
            (
                "/v2/notifications", "application/json", Array(repeating: UInt8(ascii: " "), count: (128 << 10) + 10), .contentTooLarge,
                "request.body_too_large"
            ),
            ("/v2/notifications", "text/plain", Array(#"{"signedPayload":"a.b.c"}"#.utf8), .unsupportedMediaType, "request.unsupported_media_type"),
            ("/v1/transactions", "application/json", Array(#"{"signedPayload":"a.b.c"}"#.utf8), .badRequest, "request.missing_field"),
            (
                "/v1/transactions", "application/json", Array(#"{"signedTransaction":"a.b.c","appAccountToken":"nope"}"#.utf8), .badRequest,
                "request.invalid_field"
            ),
            ("/v1/transactions", "application/json", Array(#"{"signedTransaction":"a.b.c","userId":""}"#.utf8), .badRequest, "request.invalid_field"),
            // An uploaded transaction is about 5 KiB: 17 KiB is refused there, though a notification may be that large.
            (
                "/v1/transactions", "application/json", Array(#"{"signedTransaction":"\#(upload).b.c"}"#.utf8), .badRequest,
                "request.jws_too_large"
            ),
        ]
        try await withUploadIngest(try TestUploads.open()) { client in
            for (uri, type, body, status, code) in cases {
                try await client.execute(uri: uri, method: .post, headers: [.contentType: type], body: ByteBuffer(bytes: body)) { response in
                    try expectError(response, status, code)
                }
            }
            try await client.execute(uri: "/v2/notifications", method: .get) { #expect($0.status == .notFound || $0.status == .methodNotAllowed) }
            // Without a broker, a notification that passes every check answers 503.
            let notification = ByteBuffer(bytes: Array(#"{"signedPayload":"\#(upload).b.c"}"#.utf8))
            try await client.execute(uri: "/v2/notifications", method: .post, headers: [.contentType: "application/json"], body: notification) {
                #expect($0.status == .serviceUnavailable)
            }
        }
    }
}
