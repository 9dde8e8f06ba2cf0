import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// The crash test's HTTP client: POSTs numbered JWS-shaped bodies to a URL over N connections as
/// fast as answers come, prints a JSON summary as its last line, and with `--ids-file` writes the
/// number of every body answered 200, so the test can check each one reached the output.
/// (Throughput benchmarks use wrk, which costs the shared cores less.)
@main
struct LoadGen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loadgen", abstract: "POST notification-shaped bodies at a URL and report throughput and latency.")

    @Option(help: "The URL to POST to.") var url = "http://127.0.0.1:8080/v2/notifications"
    @Option(help: "Concurrent connections.") var connections = 16
    @Option(help: "Stop after this many seconds.") var duration: Double = 10
    @Option(help: "Stop after this many requests (0: no limit).") var requests = 0
    @Option(help: "The JSON field holding the JWS: signedPayload or signedTransaction.") var field = "signedPayload"
    @Option(help: "Padding bytes in each JWS payload, to approach a real notification's size.") var padding = 3000
    @Option(help: "Write the sequence number of every body answered 200 to this file, one per line.") var idsFile: String?
    @Option(help: "The first sequence number (to keep several runs' bodies distinct).") var firstId = 0
    @Option(help: "A label for the JSON summary.") var scenario = "http"

    func run() async throws {
        var config = HTTPClient.Configuration()
        config.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        config.timeout = .init(connect: .seconds(5), read: .seconds(30))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
        let recorder = Recorder()
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int64(duration * 1000))
        let limit = requests > 0 ? requests : Int.max
        let next = Ticket()
        let url = self.url
        let field = self.field
        let padding = self.padding
        let firstId = self.firstId

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<connections {
                group.addTask {
                    while true {
                        let i = next.take()
                        guard i < limit else { return }
                        guard ContinuousClock.now < deadline else { return }
                        let sent = ContinuousClock.now
                        let id = firstId + i
                        let status = await Self.post(client: client, url: url, body: Self.body(id: id, field: field, padding: padding))
                        recorder.record(id: id, status: status, latency: ContinuousClock.now - sent)
                    }
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        try await client.shutdown()
        let summary = recorder.summary(elapsed: elapsed, scenario: scenario, connections: connections)
        if let idsFile {
            try recorder.okIDs.map(String.init).joined(separator: "\n").appending("\n").write(toFile: idsFile, atomically: true, encoding: .utf8)
        }
        print(summary.human)
        print(summary.json)
    }

    static func post(client: HTTPClient, url: String, body: String) async -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
            return Int(response.status.code)
        } catch {
            return 0
        }
    }

    /// A compact-JWS-shaped body whose payload carries the sequence number `id`. It is not signed:
    /// ingest checks shape only.
    static func body(id: Int, field: String, padding: Int) -> String {
        let header = base64url(#"{"alg":"ES256","x5c":["loadgen"]}"#)
        let payload = base64url(#"{"loadgenId":\#(id),"pad":"\#(String(repeating: "x", count: padding))"}"#)
        return #"{"\#(field)":"\#(header).\#(payload).c2lnbmF0dXJl"}"#
    }

    static func base64url(_ s: String) -> String {
        Data(s.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

/// Hands out request numbers 0, 1, 2… to the concurrent workers.
final class Ticket: Sendable {
    private let value = Atomic<Int>(0)
    func take() -> Int { value.add(1, ordering: .relaxed).oldValue }
}

/// Latencies and outcomes of every request.
final class Recorder: Sendable {
    private struct State {
        var latenciesMs: [Double] = []
        var statuses: [Int: Int] = [:]
        var okIDs: [Int] = []
    }
    private let state = Mutex(State())

    func record(id: Int, status: Int, latency: Duration) {
        let ms = Double(latency.components.seconds) * 1000 + Double(latency.components.attoseconds) / 1e15
        state.withLock { s in
            s.latenciesMs.append(ms)
            s.statuses[status, default: 0] += 1
            if status == 200 { s.okIDs.append(id) }
        }
    }

    var okIDs: [Int] { state.withLock { $0.okIDs.sorted() } }

    func summary(elapsed: Duration, scenario: String, connections: Int) -> (human: String, json: String) {
        state.withLock { s in
            let sorted = s.latenciesMs.sorted()
            func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let ok = s.statuses[200, default: 0]
            let total = sorted.count
            let rps = seconds > 0 ? Double(ok) / seconds : 0
            let round = { (x: Double) in (x * 100).rounded() / 100 }
            let statuses = s.statuses.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
            let human = String(
                format: "%@: %d requests in %.1fs, %d answered 200, %.0f req/s, p50 %.2f ms, p99 %.2f ms, max %.2f ms (connections %d)",
                scenario, total, seconds, ok, rps, pct(0.5), pct(0.99), sorted.last ?? 0, connections)
            let json =
                #"{"scenario":"\#(scenario)","connections":\#(connections),"requests":\#(total),"ok":\#(ok),"rps":\#(round(rps)),"p50_ms":\#(round(pct(0.5))),"p90_ms":\#(round(pct(0.9))),"p99_ms":\#(round(pct(0.99))),"max_ms":\#(round(sorted.last ?? 0)),"statuses":{\#(statuses)}}"#
            return (human, json)
        }
    }
}
