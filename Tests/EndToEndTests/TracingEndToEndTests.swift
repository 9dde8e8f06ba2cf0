import AppStore
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import GrantTestSupport
import KafkaClient
import NIOCore
import NIOHTTP1
import PipelineRecords
import SimulatedCustomers
import SimulatedDelivery
import SimulatorLifecycleRoutes
import TestSupport
import Testing

/// One trace from ingest to the published change event, across the five processes, exported over
/// OTLP/HTTP to a receiver of the test's own (deploy/local/otlp_receiver.py): the spans chain
/// ingest → verify → enrich (with its App Store API calls) → grant (with its transaction) → the
/// outbox publication, and the change event's `traceparent` belongs to that trace. A `traceparent`
/// W3C forbids is not continued.
@Suite("one trace from the webhook to the entitlement", .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized)
struct TracingEndToEndTests {
    @Test("an upload's spans chain across every stage into the change event; a traceparent W3C forbids starts a new trace")
    func oneTraceAcrossTheStages() async throws {
        let receiver = try await OTLPReceiver()
        defer { receiver.stop() }
        let tracing = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_BSP_SCHEDULE_DELAY": "100"]
        try await PipelineUnderTest.with(everyStage: tracing) { pipeline in
            let apple = try SimulatedApple(stateDirectory: pipeline.stateDirectory)
            let signer = try apple.authority.makeSigner()
            let product = SimulationCatalog.standard(bundleId: pipeline.bundleId).lifetime
            let incomingTrace = Self.hex(16)
            let incomingParent = Self.hex(8)
            let forbiddenTrace = Self.hex(16)
            // Each upload a purchase of its own customer, with the trace context it came with.
            let uploads: [(name: String, traceparent: String?)] = [
                ("continued", "00-\(incomingTrace)-\(incomingParent)-01"),
                ("version ff", "ff-\(forbiddenTrace)-\(Self.hex(8))-01"),
                ("all-zero trace ID", "00-00000000000000000000000000000000-\(Self.hex(8))-01"),
                ("none", nil),
            ]
            var customers: [String: UUID] = [:]
            for (index, upload) in uploads.enumerated() {
                let id = "84\(String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(13))\(index)"
                let customer = UUID()
                customers[upload.name] = customer
                var transaction = SimFixture.transaction(
                    original: id, id: id, purchased: Date().addingTimeInterval(-60), type: .nonConsumable, token: customer,
                    product: product.productId, price: product.price, bundleId: pipeline.bundleId)
                transaction.signedDate = Date().addingTimeInterval(-30)
                #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [transaction])) == 201)
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v1/transactions")
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                if let traceparent = upload.traceparent {
                    request.headers.add(name: "traceparent", value: traceparent)
                    request.headers.add(name: "tracestate", value: "vendor=test")
                }
                request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(["signedTransaction": try signer.sign(transaction)])))
                #expect(try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience).status.code == 200)
            }

            // Every customer's change event published; each names its trace in its headers.
            let changes = try await Self.changeEvents(pipeline, count: uploads.count)
            let topics = (
                raw: pipeline.topics[Topics.raw]!, verified: pipeline.topics[Topics.verified]!,
                enriched: pipeline.topics[Topics.enriched]!, changes: pipeline.topics[Topics.entitlementChanges]!
            )
            for upload in uploads {
                let key = "Sandbox:\(customers[upload.name]!.uuidString.lowercased())"
                let event = try #require(changes[key], "no change event for the \(upload.name) upload")
                let traceparent = try #require(event.headers.string("traceparent"), "the \(upload.name) upload's change event carries no traceparent")
                let parts = traceparent.split(separator: "-").map(String.init)
                try #require(parts.count == 4)
                let trace = try await receiver.trace(parts[1], containing: "send \(topics.changes)")

                let server = try #require(trace.first { $0.service == "ingest" && $0.kind == "server" }, "\(upload.name): \(trace)")
                if upload.name == "continued" {
                    #expect(parts[1] == incomingTrace, "the incoming trace is continued")
                    #expect(server.parent == incomingParent, "ingest's server span is the incoming span's child")
                } else {
                    #expect(server.parent.isEmpty, "\(upload.name): a new trace starts at ingest")
                    #expect(parts[1] != incomingTrace && parts[1] != forbiddenTrace && parts[1] != String(repeating: "0", count: 32))
                }
                let verify = try Self.child(of: server, in: trace, service: "verify", name: "process \(topics.raw)")
                let enrich = try Self.child(of: verify, in: trace, service: "enrich", name: "process \(topics.verified)")
                let grant = try Self.child(of: enrich, in: trace, service: "grant", name: "process \(topics.enriched)")
                #expect(enrich.attributes["appstore.outputs"] == "1", "enrich produced the record grant took: \(enrich.attributes)")
                // Grant's transaction is its batch's first record's child; a later record links to that one.
                let all = try receiver.spans()
                let carriers = Set([grant.id] + grant.links)
                let transactions = all.filter {
                    $0.name == "grant transaction" && (carriers.contains($0.parent) || !carriers.isDisjoint(with: $0.links))
                }
                #expect(transactions.count == 1, "\(upload.name): the transaction that carried the record: \(transactions)")
                #expect(transactions.first?.attributes["db.system.name"] == "postgresql")
                let send = try Self.child(of: grant, in: trace, service: "grant", name: "send \(topics.changes)")
                #expect(parts[2] == send.id, "the change event's traceparent names the span that published it")
                let lookups = trace.filter { $0.service == "enrich" && $0.kind == "client" && $0.parent == enrich.id }
                #expect(!lookups.isEmpty, "\(upload.name): enrich's App Store API calls are its record's children: \(trace)")
                #expect(verify.attributes["messaging.system"] == "kafka" && verify.attributes["messaging.destination.name"] == topics.raw)
            }
            let all = try receiver.spans()
            #expect(!all.contains { $0.trace == forbiddenTrace }, "a traceparent with version ff is never continued")
            // The operator's way in: the customer's notifications name their traces.
            let shown = try await pipeline.appstorectl(["customer", customers["continued"]!.uuidString])
            #expect(shown.status == 0 && shown.stdout.contains("trace \(incomingTrace)"), "\(shown.output)")
        }
    }

    @Test("two instances of each stage, one SIGKILLed mid-run: a span left without its parent belongs to a record that reached grant")
    func noSpanOrphanedByARestart() async throws {
        let receiver = try await OTLPReceiver()
        defer { receiver.stop() }
        let tracing = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_BSP_SCHEDULE_DELAY": "20"]
        try await PipelineUnderTest.with(everyStage: tracing) { pipeline in
            for stage in PipelineUnderTest.Stage.allCases { try await pipeline.launchReplica(stage) }
            var request = LifecycleRunRequest(customers: 40, webhook: "")
            request.seed = 3030
            request.stepsPerSecond = 25  // about 20 s of deliveries, so the kill lands mid-run
            // Apple delivers some notifications twice, as it does: enrich drops the repeat, whose trace ends there.
            request.duplicateRate = 0.1
            request.maxDelayMs = 2000
            let started = ContinuousClock.now
            try await pipeline.play(request)
            // Apple delivers to the first ingest; the app's uploads go to both, in turn, meanwhile.
            async let uploads = Self.uploadsInTurn(pipeline, count: 20, to: ["ingest", "ingest-2"])
            try await Task.sleep(until: started + .seconds(6))
            try await pipeline.crashAndRestart(.enrich)
            let uploaded = try await uploads
            _ = try await pipeline.waitUntilDrained(timeout: .seconds(600))
            _ = try await Self.changeEvents(pipeline, containing: uploaded)
            let spans = try await receiver.settled()
            let topics = (verified: pipeline.topics[Topics.verified]!, enriched: pipeline.topics[Topics.enriched]!)
            let ids = Set(spans.map(\.id))
            let orphans = spans.filter { !$0.parent.isEmpty && !ids.contains($0.parent) }
            let byTrace = Dictionary(grouping: spans, by: \.trace)
            // Where a parent can go missing: enrich's spans not yet exported when it was killed, so the
            // orphans are its own children (its API calls) or grant's spans of the records it produced.
            for orphan in orphans {
                #expect(
                    (orphan.service == "enrich" && orphan.kind == "client") || orphan.name == "process \(topics.enriched)",
                    "an orphan where no process was killed: \(orphan)")
                // Its record still reached grant: produced by the killed enrich before it died (only its
                // span was lost), or retried by the surviving one.
                let trace = byTrace[orphan.trace] ?? []
                #expect(trace.contains { $0.name == "process \(topics.enriched)" }, "the orphan's record never reached grant: \(trace)")
            }
            // Every notification ingest acknowledged (answered 200) has a trace that starts at ingest
            // and reaches grant, whatever the kill, unless enrich dropped it as a replay and says so (a
            // delivery Apple or the app repeated after a slow answer: its first copy's trace is the one
            // that reaches grant). A 503 (the broker did not acknowledge in time, as beside the whole
            // suite) wrote nothing, so its trace ends at ingest; Apple delivers again in a trace of its own.
            let roots = spans.filter { $0.service == "ingest" && $0.kind == "server" }
            let acknowledged = roots.filter { $0.attributes["http.response.status_code"] == "200" }
            let refused = roots.filter { $0.attributes["http.response.status_code"] != "200" }
            #expect(
                refused.allSatisfy { $0.attributes["http.response.status_code"] == "503" },
                "ingest answered only 200, or 503 while the broker was slow: \(refused.map { $0.attributes })")
            let reached = Set(spans.filter { $0.name == "process \(topics.enriched)" }.map(\.trace))
            let droppedReplays = Set(
                spans.filter { $0.name == "process \(topics.verified)" && $0.attributes["appstore.outputs"] == "0" }.map(\.trace))
            let unreached = acknowledged.filter { !reached.contains($0.trace) && !droppedReplays.contains($0.trace) }
            let replayRoots = acknowledged.filter { droppedReplays.contains($0.trace) }.count
            #expect(acknowledged.count >= 60)
            #expect(replayRoots > 0, "no repeated delivery was dropped as a replay")
            #expect(unreached.isEmpty, "traces that stop short of grant, no replay dropped: \(unreached.prefix(3).map { byTrace[$0.trace] ?? [] })")
            print(
                "tracing through a restart: \(spans.count) spans in \(roots.count) traces (\(refused.count) answered 503), "
                    + "\(orphans.count) without their parent (the killed enrich's), \(replayRoots) ending at enrich as dropped replays")
        }
    }

    /// Seeds `count` purchases of customers of their own and uploads them, a second apart, to the
    /// ingests named in turn. Returns the customers.
    static func uploadsInTurn(_ pipeline: PipelineUnderTest, count: Int, to ingests: [String]) async throws -> [UUID] {
        let apple = try SimulatedApple(stateDirectory: pipeline.stateDirectory)
        let signer = try apple.authority.makeSigner()
        let product = SimulationCatalog.standard(bundleId: pipeline.bundleId).lifetime
        var customers: [UUID] = []
        for index in 0..<count {
            let id = "83\(String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(12))\(String(format: "%02d", index))"
            let customer = UUID()
            var transaction = SimFixture.transaction(
                original: id, id: id, purchased: Date().addingTimeInterval(-60), type: .nonConsumable, token: customer,
                product: product.productId, price: product.price, bundleId: pipeline.bundleId)
            transaction.signedDate = Date().addingTimeInterval(-30)
            #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [transaction])) == 201)
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(pipeline.ports[ingests[index % ingests.count]]!)/v1/transactions")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(["signedTransaction": try signer.sign(transaction)])))
            #expect(try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience).status.code == 200)
            customers.append(customer)
            try await Task.sleep(for: .milliseconds(500))
        }
        return customers
    }

    /// Waits until every one of `customers` has a change event published.
    static func changeEvents(_ pipeline: PipelineUnderTest, containing customers: [UUID]) async throws -> [String: KafkaMessage] {
        let keys = Set(customers.map { "Sandbox:\($0.uuidString.lowercased())" })
        let deadline = ContinuousClock.now + .seconds(240)
        while true {
            let events = try await changeEvents(pipeline, count: 0)
            if keys.isSubset(of: events.keys) { return events }
            guard ContinuousClock.now < deadline else { throw TestSupportError("not every upload's change was published in 240 s") }
            try await Task.sleep(for: .seconds(1))
        }
    }

    static func hex(_ bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 1...255)) }.joined()
    }

    /// The one span of `service` named `name` whose parent is `parent`.
    static func child(of parent: OTLPReceiver.Span, in trace: [OTLPReceiver.Span], service: String, name: String) throws -> OTLPReceiver.Span {
        let found = trace.filter { $0.service == service && $0.name == name && $0.parent == parent.id }
        guard found.count == 1 else {
            throw TestSupportError(
                "expected one \(service) span '\(name)' under \(parent.service)'s '\(parent.name)', found \(found.count) in \(trace)")
        }
        return found[0]
    }

    /// The changes topic's records by key, once there are `count` of them.
    static func changeEvents(_ pipeline: PipelineUnderTest, count: Int) async throws -> [String: KafkaMessage] {
        let client = TestServices.clientConfiguration("e2e-tracing")
        let topic = try #require(pipeline.topics[Topics.entitlementChanges])
        let deadline = ContinuousClock.now + .seconds(240)
        while true {
            let partitions = try await KafkaGroupOffsets(configuration: client).partitions(of: topic)
            let records = try await KafkaTopicScanner(configuration: client, idle: .seconds(2)).scan(
                Dictionary(uniqueKeysWithValues: partitions.map { ($0, Int64?.none) }))
            var byKey: [String: KafkaMessage] = [:]
            for record in records { if let key = record.keyString { byKey[key] = record } }
            if byKey.count >= count { return byKey }
            guard ContinuousClock.now < deadline else { throw TestSupportError("\(byKey.count) of \(count) change events in 240 s") }
            try await Task.sleep(for: .milliseconds(500))
        }
    }
}

/// deploy/local/otlp_receiver.py as a child process: OTLP/HTTP on a free loopback port, every span
/// it receives one JSON line in a file.
final class OTLPReceiver: @unchecked Sendable {
    struct Span: CustomStringConvertible {
        var trace: String
        var id: String
        var parent: String
        var name: String
        var kind: String
        var service: String
        var attributes: [String: String]
        /// The span IDs it links to.
        var links: [String]
        var description: String { "\(service)/\(kind) '\(name)' \(id)←\(parent.isEmpty ? "root" : parent)" }
    }

    let port = LocalHTTP.freePort()
    let file: URL
    private let process: ManagedProcess

    init() async throws {
        let python = try await CheckoutPython.require(["opentelemetry.proto.collector.trace.v1.trace_service_pb2"])
        file = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-\(UUID().uuidString.prefix(8)).jsonl")
        let script = TestServices.repositoryRoot.appendingPathComponent("deploy/local/otlp_receiver.py").path
        process = try await ManagedProcess(
            path: python, arguments: [script, "--port", "\(port)", "--out", file.path], environment: [:], logName: "otlp-receiver-\(port)")
    }

    func stop() {
        process.sendKill()
        try? FileManager.default.removeItem(at: file)
    }

    /// Every span received so far.
    func spans() throws -> [Span] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            let attributes = (object["attributes"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
            let links = (object["links"] as? [[String: Any]] ?? []).compactMap { $0["span_id"] as? String }
            return Span(
                trace: object["trace_id"] as? String ?? "", id: object["span_id"] as? String ?? "",
                parent: object["parent_span_id"] as? String ?? "", name: object["name"] as? String ?? "",
                kind: object["kind"] as? String ?? "", service: object["service"] as? String ?? "", attributes: attributes,
                links: links)
        }
    }

    /// Every span, once a further second brought none (every process exports on its own schedule).
    func settled() async throws -> [Span] {
        var seen = -1
        while true {
            let spans = try spans()
            if spans.count == seen { return spans }
            seen = spans.count
            try await Task.sleep(for: .seconds(1))
        }
    }

    /// The spans of `trace`, once one named `name` arrived and a further second brought none
    /// (every process exports on its own schedule).
    func trace(_ trace: String, containing name: String) async throws -> [Span] {
        let deadline = ContinuousClock.now + .seconds(120)
        var seen = -1
        while true {
            let spans = try spans().filter { $0.trace == trace }
            if spans.contains(where: { $0.name == name }), spans.count == seen { return spans }
            seen = spans.count
            guard ContinuousClock.now < deadline else { throw TestSupportError("trace \(trace) never held '\(name)': \(spans)") }
            try await Task.sleep(for: .seconds(1))
        }
    }
}
