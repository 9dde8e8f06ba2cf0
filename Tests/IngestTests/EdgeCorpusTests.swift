import AsyncHTTPClient
import Foundation
import IngestService
import KafkaClient
import NIOCore
import NIOHTTP1
import PipelineRecords
import TestSupport
import Testing

/// Issue 28's edge corpus: bodies built to break a JSON reader or to smuggle a second reading past
/// ingest, posted over HTTP to both routes of a running ingest process while 200 valid requests at
/// a time go through. Ingest must answer each with 200 or 400 (never crash or hang), store exactly
/// its own rebuild of what it accepted, and not grow by holding on to any of it (its resident
/// memory, read from /proc). Latency figures are printed, never asserted.
@Suite("Ingest under an edge corpus", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct EdgeCorpusTests {
    /// The corpus, named; each body is posted to `/v2/notifications` and `/v1/transactions`.
    static func corpus() -> [(name: String, body: [UInt8])] {
        let jws = fakeJWS()
        let other = fakeJWS()
        return [
            ("128 KiB of [", Array(repeating: UInt8(ascii: "["), count: 128 << 10 - 64)),
            ("duplicate signedPayload, valid first", Array(#"{"signedPayload":"\#(jws)","signedPayload":"not a jws"}"#.utf8)),
            ("duplicate signedPayload, valid last", Array(#"{"signedPayload":"not a jws","signedPayload":"\#(jws)"}"#.utf8)),
            ("duplicate signedTransaction, two JWS", Array(#"{"signedTransaction":"\#(jws)","signedTransaction":"\#(other)"}"#.utf8)),
            ("lone high surrogate", Array(#"{"signedPayload":"\#(jws)","userId":"\ud800"}"#.utf8)),
            ("lone low surrogate in the JWS", Array(#"{"signedPayload":"\udc00\#(jws)"}"#.utf8)),
            ("overlong UTF-8 slash", Array(#"{"signedPayload":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)),
            ("overlong UTF-8 in userId", Array(#"{"signedTransaction":"\#(jws)","userId":""#.utf8) + [0xE0, 0x80, 0xAF] + Array(#""}"#.utf8)),
            (
                "100,000-digit number",
                Array(#"{"signedPayload":"\#(jws)","n":"#.utf8) + Array(repeating: UInt8(ascii: "9"), count: 100_000) + [UInt8(ascii: "}")]
            ),
            ("NUL in userId", Array(#"{"signedTransaction":"\#(jws)","userId":"a\u0000b"}"#.utf8)),
            ("raw NUL byte in userId", Array(#"{"signedTransaction":"\#(jws)","userId":"a"#.utf8) + [0] + Array(#"b"}"#.utf8)),
            (
                "127 KiB string",
                Array(#"{"signedPayload":"\#(jws)","pad":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 127 << 10 - 200) + Array(#""}"#.utf8)
            ),
            (
                "127 KiB JWS",
                Array(#"{"signedPayload":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 127 << 10 - 200) + Array(#".b.c"}"#.utf8)
            ),
        ]
    }

    /// A process's resident memory, from /proc (Linux).
    static func residentBytes(of pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    @Test("a user ID (body or token claim) is non-empty, at most 256 bytes and free of control characters")
    func userIdRule() {
        #expect(AppUploadHints.isValidUserId("user-42") && AppUploadHints.isValidUserId("Zoë 🙂"))
        for bad in ["", "a\u{0}b", "line\nbreak", "tab\t", "esc\u{1B}[31m", "del\u{7F}", "c1\u{85}", String(repeating: "x", count: 257)] {
            #expect(!AppUploadHints.isValidUserId(bad), "\(bad.debugDescription)")
        }
    }

    @Test("each corpus body gets 200 or 400 on both routes, what is stored is ingest's own rebuild, valid requests all pass, memory stays flat")
    func corpusUnderLoad() async throws {
        let topic = try await TestServices.makeTopic("edge-raw", partitions: 4)
        let port = LocalHTTP.freePort()
        let ingest = try await ManagedProcess(
            "ingest",
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": TestServices.bootstrapServers, "HTTP_HOST": "127.0.0.1", "HTTP_PORT": "\(port)",
                "RAW_TOPIC": topic, "INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "com.example.edge::Sandbox", "LOG_LEVEL": "warning",
                "INGEST_ACK_TIMEOUT_MS": TestServices.ingestAckTimeoutMilliseconds,
            ], logName: "edge-corpus-ingest-\(UUID().uuidString.prefix(8))")
        defer { ingest.sendKill() }
        try await LocalHTTP.waitForPort(port)
        var pool = HTTPClient.Configuration()
        pool.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 256)
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: pool)
        let base = "http://127.0.0.1:\(port)"
        let corpus = Self.corpus()
        let rounds = 20
        let valid = 4_000
        // The same load alone first: the figures the corpus run is compared with.
        let baseline = try await Self.postValid(http, base, count: valid, inFlight: 200)
        let before = Self.residentBytes(of: ingest.pid)
        async let edge = Self.postCorpus(http, base, corpus: corpus, rounds: rounds)
        async let load = Self.postValid(http, base, count: valid, inFlight: 200)
        let (edgeAnswers, validAnswers) = try await (edge, load)
        let growth = Self.residentBytes(of: ingest.pid) - before
        #expect(ingest.isRunning, "ingest is still up")
        try await http.shutdown()
        await ingest.terminate(grace: .seconds(30))
        #expect(baseline.allSatisfy { $0.status == .ok })
        let stored = try await TopicReader.read(topic, timeout: .seconds(300)) { $0.count >= 2 * valid }

        var byName: [String: Set<Int>] = [:]
        for answer in edgeAnswers { byName["\(answer.route) \(answer.name)", default: []].insert(Int(answer.status.code)) }
        let unexpected = byName.filter { !$0.value.isSubset(of: [200, 400]) }
        #expect(unexpected.isEmpty, "only 200 or 400: \(unexpected)")
        #expect(edgeAnswers.count == corpus.count * 2 * rounds)
        #expect(validAnswers.allSatisfy { $0.status == .ok }, "valid requests: \(Set(validAnswers.map(\.status.code)))")
        // Every stored body is exactly ingest's rebuild of the fields it read from itself.
        for record in stored {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])
            let rebuilt: [UInt8]
            if let payload = object["signedPayload"] as? String {
                rebuilt = RawRecord.notificationBody(signedPayload: payload)
            } else {
                rebuilt = RawRecord.uploadBody(
                    signedTransaction: try #require(object["signedTransaction"] as? String), appAccountToken: object["appAccountToken"] as? String,
                    userId: object["userId"] as? String, authentication: .open)
            }
            #expect(record.value == rebuilt, "stored \(record.text.prefix(200))")
        }
        // A control character in userId is refused (Postgres cannot store a NUL; a line break forges logs).
        #expect(byName["/v1/transactions NUL in userId"] == [400] && byName["/v1/transactions raw NUL byte in userId"] == [400])
        let accepted = edgeAnswers.filter { $0.status == .ok }.count
        #expect(
            stored.count >= 2 * valid && stored.count <= 2 * valid + accepted,
            "stored \(stored.count): \(2 * valid) valid, \(accepted) corpus bodies accepted")
        #expect(growth < 50 << 20, "ingest's resident memory grew by \(growth >> 20) MB")
        let latencies = validAnswers.map(\.latency).sorted()
        let alone = baseline.map(\.latency).sorted()
        let p99 = latencies[latencies.count * 99 / 100]
        let p99Alone = alone[alone.count * 99 / 100]
        print(
            "edge corpus: \(corpus.count) bodies × 2 routes × \(rounds) rounds (\(byName.map { "\($0.key): \($0.value.sorted())" }.sorted().joined(separator: "; "))); "
                + "\(valid) valid at 200 in flight: p99 \(p99) with the corpus, \(p99Alone) alone (ratio \(String(format: "%.2f", p99 / p99Alone))); "
                + "resident growth \(growth >> 20) MB"
        )
    }

    static func post(_ http: HTTPClient, _ url: String, _ body: [UInt8]) async throws -> HTTPResponseStatus {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await http.execute(request, timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response.status
    }

    static func postCorpus(
        _ http: HTTPClient, _ base: String, corpus: [(name: String, body: [UInt8])], rounds: Int
    ) async throws -> [(name: String, route: String, status: HTTPResponseStatus)] {
        var answers: [(name: String, route: String, status: HTTPResponseStatus)] = []
        for _ in 0..<rounds {
            try await withThrowingTaskGroup(of: (name: String, route: String, status: HTTPResponseStatus).self) { posts in
                for (name, body) in corpus {
                    for route in ["/v2/notifications", "/v1/transactions"] {
                        posts.addTask { (name, route, try await post(http, base + route, body)) }
                    }
                }
                for try await answer in posts { answers.append(answer) }
            }
        }
        return answers
    }

    /// `count` valid notifications with `inFlight` at a time.
    static func postValid(
        _ http: HTTPClient, _ base: String, count: Int, inFlight: Int
    ) async throws -> [(status: HTTPResponseStatus, latency: Duration)] {
        var answers: [(status: HTTPResponseStatus, latency: Duration)] = []
        for wave in stride(from: 0, to: count, by: inFlight) {
            try await withThrowingTaskGroup(of: (status: HTTPResponseStatus, latency: Duration).self) { posts in
                for _ in wave..<min(wave + inFlight, count) {
                    posts.addTask {
                        let started = ContinuousClock.now
                        let status = try await post(http, base + "/v2/notifications", Array(#"{"signedPayload":"\#(fakeJWS())"}"#.utf8))
                        return (status, ContinuousClock.now - started)
                    }
                }
                for try await answer in posts { answers.append(answer) }
            }
        }
        return answers
    }
}
