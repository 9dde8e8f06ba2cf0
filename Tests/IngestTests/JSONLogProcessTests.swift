import AsyncHTTPClient
import Foundation
import KafkaClient
import LogKeys
import NIOCore
import NIOHTTP1
import StageRuntime
import TestSupport
import Testing

/// Started as processes with `LOG_FORMAT=json`, ingest and verify write nothing to stderr but JSON
/// objects, one per line, each with the stable keys; `/metrics` reports them ready; their tasks run
/// on the event loops.
@Suite("processes write JSON logs", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct JSONLogProcessTests {
    /// Every line of `text` parsed as a JSON object; a line that is not one fails the test.
    func jsonLines(_ text: String, process: String) throws -> [[String: Any]] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast(text.hasSuffix("\n") ? 1 : 0)
        return try lines.map { line in
            let parsed = try? JSONSerialization.jsonObject(with: Data(line.utf8))
            let object = try #require(parsed as? [String: Any], "\(process) wrote a line that is not a JSON object: \(line)")
            for key in JSONLogHandler.fixedKeys { #expect(object[key] is String, "\(process): key \(key) missing in \(line)") }
            return object
        }
    }

    func get(_ url: String) async throws -> (Int, String) {
        let response = try await LocalHTTP.client.execute(HTTPClientRequest(url: url), timeout: LocalHTTP.patience)
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    func post(_ url: String, body: String, contentType: String = "application/json", requestID: String) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: contentType)
        request.headers.add(name: "X-Request-Id", value: requestID)
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await LocalHTTP.client.execute(request, timeout: .seconds(90))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    @Test("ingest and verify started with LOG_FORMAT=json write only JSON lines")
    func onlyJSONLines() async throws {
        let raw = try await TestServices.makeTopic("jsonlog-raw")
        let verified = try await TestServices.makeTopic("jsonlog-verified")
        let dlq = try await TestServices.makeTopic("jsonlog-dlq")
        let id = UUID().uuidString.prefix(8).lowercased()
        let ingestPort = LocalHTTP.freePort()
        let verifyPort = LocalHTTP.freePort()
        let common = [
            "KAFKA_BOOTSTRAP_SERVERS": TestServices.bootstrapServers, "LOG_FORMAT": "json", "LOG_LEVEL": "debug",
            "HTTP_HOST": "127.0.0.1",
        ]
        let ingest = try await ManagedProcess(
            "ingest",
            environment: common.merging([
                "RAW_TOPIC": raw, "HTTP_PORT": "\(ingestPort)", "INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "com.example.jsonlog::Sandbox",
                "INGEST_ACK_TIMEOUT_MS": TestServices.ingestAckTimeoutMilliseconds,
            ]) { $1 }, logName: "jsonlog-\(id)-ingest")
        let verify = try await ManagedProcess(
            "verify",
            environment: common.merging([
                "INPUT_TOPIC": raw, "OUTPUT_TOPIC": verified, "DLQ_TOPIC": dlq, "HTTP_PORT": "\(verifyPort)",
                "KAFKA_GROUP_ID": "jsonlog-\(id)", "KAFKA_SESSION_TIMEOUT_MS": LocalStack.value("LOCAL_KAFKA_SESSION_TIMEOUT_MS"),
                "KAFKA_HEARTBEAT_INTERVAL_MS": LocalStack.value("LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS"),
                "KAFKA_FETCH_WAIT_MAX_MS": "25", "APPSTORE_APPS": "com.example.jsonlog::Sandbox",
            ]) { $1 }, logName: "jsonlog-\(id)-verify")
        var stopped = false
        defer {
            if !stopped {
                ingest.sendKill()
                verify.sendKill()
            }
        }
        try await LocalHTTP.waitForPort(ingestPort)
        try await LocalHTTP.waitForPort(verifyPort)

        // Stored (and then dead-lettered by verify: the signature is fake), refused, and refused
        // with an X-Request-Id ingest must not log as sent.
        let webhook = "http://127.0.0.1:\(ingestPort)/v2/notifications"
        for i in 0..<3 {
            #expect(try await post(webhook, body: #"{"signedPayload":"\#(fakeJWS())"}"#, requestID: "stored-\(i)") == 200)
        }
        #expect(try await post(webhook, body: #"{"signedPayload":"a.b"}"#, requestID: #"quote"and\backslash"#) == 400)
        #expect(try await post(webhook, body: "{}", contentType: "text/plain; charset=\"utf-8\"", requestID: "media") == 415)
        let (status, metrics) = try await get("http://127.0.0.1:\(ingestPort)/metrics")
        #expect(status == 200)
        #expect(metrics.contains(#"pipeline_stage_ready{stage="ingest"} 1"#))
        let deadLetters = try await TopicReader.read(dlq) { $0.count >= 3 }
        #expect(deadLetters.count >= 3)
        var verifyMetrics = ""
        for _ in 0..<40 {  // ready once it has joined its group and taken its partition
            verifyMetrics = try await get("http://127.0.0.1:\(verifyPort)/metrics").1
            if verifyMetrics.contains(#"pipeline_stage_ready{stage="verify"} 1"#) { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(verifyMetrics.contains(#"pipeline_stage_ready{stage="verify"} 1"#))

        #expect(await ingest.terminate() == .exited(0))
        #expect(await verify.terminate() == .exited(0))
        stopped = true

        let ingestLines = try jsonLines(ingest.output, process: "ingest")
        let verifyLines = try jsonLines(verify.output, process: "verify")
        let ingestMessages = ingestLines.compactMap { $0["message"] as? String }
        let verifyMessages = verifyLines.compactMap { $0["message"] as? String }
        #expect(ingestMessages.contains("starting"))
        let refused = ingestLines.filter { $0["message"] as? String == "request refused" }
        #expect(refused.count == 2)
        // An unsafe X-Request-Id is replaced by a fresh UUID before it reaches a log line.
        #expect(!ingest.output.contains("backslash"))
        #expect(refused.contains { ($0[LogKey.requestID] as? String).flatMap(UUID.init(uuidString:)) != nil })
        #expect(ingestLines.allSatisfy { $0[LogKey.stage] as? String == "ingest" })
        #expect(verifyMessages.contains("starting") && verifyMessages.contains("stage started"))
        // Both ran (served, consumed, shut down cleanly) with their tasks on NIO's event loops, the
        // default: the executor hook was there to take.
        for (process, lines) in [("ingest", ingestLines), ("verify", verifyLines)] {
            let starting = lines.first { $0["message"] as? String == "starting" }
            #expect(starting?[LogKey.tasksOnEventLoops] as? String == "true", "\(process): \(String(describing: starting))")
        }
        let deadLettered = verifyLines.filter { $0["message"] as? String == "record dead-lettered" }
        #expect(deadLettered.count >= 3)
        #expect(deadLettered.allSatisfy { $0[LogKey.partition] != nil && $0[LogKey.offset] != nil && $0[LogKey.stage] as? String == "verify" })
        #expect(verifyMessages.contains("stage stopped"))
    }
}
