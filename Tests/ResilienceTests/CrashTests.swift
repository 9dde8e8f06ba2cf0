import AsyncHTTPClient
import Foundation
import KafkaClient
import NIOCore
import TestSupport
import Testing

extension Resilience {
    @Suite("No loss under crashes", .timeLimit(.minutes(15)))
    struct CrashTests {
        @Test("20,000 bodies through ingest while the consuming stage is SIGKILLed twice: every 200 reaches the output")
        func killStageTwice() async throws {
            let raw = try await TestServices.makeTopic("crash-raw", partitions: 4)
            let output = try await TestServices.makeTopic("crash-out", partitions: 4)
            let dlq = try await TestServices.makeTopic("crash-dlq")
            let ingestPort = LocalHTTP.freePort()
            let ingest = try await ManagedProcess(
                "ingest",
                environment: [
                    "KAFKA_BOOTSTRAP_SERVERS": TestServices.bootstrapServers, "RAW_TOPIC": raw,
                    "HTTP_HOST": "127.0.0.1", "HTTP_PORT": "\(ingestPort)", "LOG_LEVEL": "warning",
                    "INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "com.example.crash::Sandbox",
                ], logName: "crash-ingest")
            defer { ingest.sendKill() }
            try await LocalHTTP.waitForPort(ingestPort)

            let relayPort = LocalHTTP.freePort()
            let relayEnvironment = [
                "KAFKA_BOOTSTRAP_SERVERS": TestServices.bootstrapServers, "INPUT_TOPIC": raw, "OUTPUT_TOPIC": output,
                "DLQ_TOPIC": dlq, "KAFKA_GROUP_ID": TestServices.uniqueGroup("crash-relay"), "HTTP_HOST": "127.0.0.1",
                "HTTP_PORT": "\(relayPort)", "KAFKA_SESSION_TIMEOUT_MS": LocalStack.value("LOCAL_KAFKA_SESSION_TIMEOUT_MS"),
                "KAFKA_HEARTBEAT_INTERVAL_MS": LocalStack.value("LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS"),
                "KAFKA_FETCH_WAIT_MAX_MS": "25", "KAFKA_COMMIT_INTERVAL_MS": "500", "LOG_LEVEL": "info",
            ]
            var relay = try await ManagedProcess("stage-relay", environment: relayEnvironment, logName: "crash-relay-0")
            let idsFile = TestServices.repositoryRoot.appendingPathComponent(".local/logs/crash-ok-ids.txt").path
            let load = try await ManagedProcess(
                "loadgen",
                arguments: [
                    "--url", "http://127.0.0.1:\(ingestPort)/v2/notifications", "--connections", "32", "--requests", "20000",
                    "--duration", "300", "--padding", "300", "--ids-file", idsFile, "--scenario", "crash",
                ], environment: [:], logName: "crash-loadgen")

            // Two hard crashes of the consuming stage while it is busy copying: each time, wait until
            // this incarnation has processed a good number of records, then SIGKILL it.
            for round in 1...2 {
                try await waitUntilProcessed(atLeast: 1500, port: relayPort)
                await relay.kill9()
                relay = try await ManagedProcess("stage-relay", environment: relayEnvironment, logName: "crash-relay-\(round)")
            }
            #expect(await load.waitForExit() == .exited(0))
            let accepted = Set(try String(contentsOfFile: idsFile, encoding: .utf8).split(separator: "\n").compactMap { Int($0) })

            var seen: [Int: Int] = [:]
            let stored = try await TopicReader.read(output) { records in
                records.count >= accepted.count && Set(loadgenIDs(records.map(\.value))).isSuperset(of: accepted)
            }
            for id in loadgenIDs(stored.map(\.value)) { seen[id, default: 0] += 1 }
            #expect(await relay.terminate() == .exited(0), "SIGTERM drains, commits and exits cleanly")
            let lost = accepted.subtracting(seen.keys)
            let duplicates = seen.values.reduce(0) { $0 + max(0, $1 - 1) }
            print("crash test: posted 20000, answered 200: \(accepted.count), delivered: \(seen.count), lost=\(lost.count), duplicates=\(duplicates)")
            #expect(accepted.count == 20000, "the broker stayed up, so every request is answered 200")
            #expect(lost.isEmpty, "lost: \(lost.sorted().prefix(20))")
        }

        /// Polls the relay's `/metrics` until `pipeline_messages_processed_total` reaches `count`.
        func waitUntilProcessed(atLeast count: Int, port: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(120)
            while ContinuousClock.now < deadline {
                if let text = try? await LocalHTTP.client.get(url: "http://127.0.0.1:\(port)/metrics").get(),
                    let body = text.body.map({ String(buffer: $0) }),
                    let line = body.split(separator: "\n").first(where: { $0.hasPrefix("pipeline_messages_processed_total") }),
                    let value = line.split(separator: " ").last.flatMap({ Double($0) }), Int(value) >= count
                {
                    return
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw TestSupportError("the relay processed fewer than \(count) records in 120 s")
        }
    }
}
