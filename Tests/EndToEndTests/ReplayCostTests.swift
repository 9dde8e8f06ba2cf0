import AppStore
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import GrantTestSupport
import NIOCore
import NIOHTTP1
import SimulatedCustomers
import Synchronization
import TestSupport
import Testing

/// Issue 14's acceptance: one client replaying one valid notification cannot starve enrichment.
/// Posted 10,000 times, it costs at most a handful of App Store Server API calls (the simulator
/// counts them) and leaves Postgres exactly as the first post left it. How long the posting takes is
/// printed, never asserted: it is the machine's speed (`deploy/local/bench` measures throughput).
@Suite(
    "Replays cost nothing: one valid notification posted 10,000 times",
    .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized, .timeLimit(.minutes(15)))
struct ReplayCostTests {
    static var posts: Int { Int(ProcessInfo.processInfo.environment["REPLAY_POSTS"] ?? "") ?? 10_000 }
    static let inFlight = 48

    @Test("10,000 posts of one valid notification: at most 5 API calls, Postgres unchanged after the first")
    func tenThousandPosts() async throws {
        try await PipelineUnderTest.with { pipeline in
            let body = try await Self.seedNotification(pipeline)
            let http = HTTPClient(
                eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                configuration: HTTPClient.Configuration(
                    connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: Self.inFlight)))
            do {
                let url = "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v2/notifications"
                #expect(try await pipeline.post("/sim/stats", json: [String: String](), method: .DELETE) == 204)

                // The first post: enriched (one history and one status call) and granted.
                #expect(try await Self.post(body, to: url, http) == 200)
                let firstDeadline = ContinuousClock.now + .seconds(120)
                // Granted and its change published (the publisher deletes it from the outbox).
                while true {
                    let logged = try await pipeline.loggedEvents()
                    if logged >= 1, try await pipeline.unpublishedChanges() == 0 { break }
                    guard ContinuousClock.now < firstDeadline else { throw TestSupportError("the first post was never granted and published") }
                    try await Task.sleep(for: .milliseconds(200))
                }
                let afterFirst = try await pipeline.dump()
                let entitled = try await pipeline.entitlements()
                #expect(entitled.count == 1 && entitled.values.first?.isEmpty == false, "the notification grants an entitlement: \(entitled)")

                // The replays, concurrently.
                let started = ContinuousClock.now
                let failures = try await Self.postConcurrently(body, to: url, count: Self.posts - 1, http)
                let posting = ContinuousClock.now - started
                #expect(failures.isEmpty, "ingest answered \(failures.prefix(5))")

                // Everything consumed: enrich has taken every record verify passed on.
                let deadline = ContinuousClock.now + .seconds(240)
                while await pipeline.metric(.enrich, "pipeline_messages_processed_total") < Double(Self.posts) {
                    guard ContinuousClock.now < deadline else {
                        let verified = await pipeline.metric(.verify, "pipeline_messages_processed_total")
                        let enriched = await pipeline.metric(.enrich, "pipeline_messages_processed_total")
                        throw TestSupportError("not consumed in time: verify \(verified), enrich \(enriched) of \(Self.posts)")
                    }
                    try await Task.sleep(for: .milliseconds(500))
                }
                // The marker: enrich has processed every post (its count rises only once a record's outputs,
                // if any, were delivered), so what it produced and dropped is final; no wait after it.
                let consumed = ContinuousClock.now - started

                let stats = try AppStoreJSON.decoder.decode(SimulatorStatistics.self, from: try await pipeline.get("/sim/stats"))
                let produced = await pipeline.metric(.enrich, "pipeline_messages_produced_total")
                let dropped = await pipeline.metric(.enrich, "enrich_replays_dropped_total")
                let granted = await pipeline.metric(.grant, "pipeline_messages_processed_total")
                print(
                    "replay cost: \(Self.posts) posts in \(posting), all consumed after \(consumed); API calls \(stats.requests) \(stats.byEndpoint); "
                        + "enrich produced \(Int(produced)), dropped \(Int(dropped)) replays; grant processed \(Int(granted))")
                #expect(stats.requests <= 5, "API calls: \(stats.byEndpoint)")
                #expect(produced == 1, "only the first post was enriched")
                #expect(dropped == Double(Self.posts - 1))
                #expect(await pipeline.metric(.enrich, "pipeline_messages_dead_lettered_total") == 0)

                let afterAll = try await pipeline.dump()
                #expect(afterAll.keys.sorted() == afterFirst.keys.sorted())
                for (table, rows) in afterFirst {
                    #expect(afterAll[table] == rows, "table \(table) changed after the replays")
                }
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    /// Stores a premium subscription at the simulator and returns the body of a `SUBSCRIBED`
    /// notification about it, signed by the simulator's own CA (loaded from its state directory, so
    /// the pipeline trusts it like every notification the simulator sends).
    static func seedNotification(_ pipeline: PipelineUnderTest) async throws -> ByteBuffer {
        let signer = try SimulatedApple(stateDirectory: pipeline.stateDirectory)
        let product = SimulationCatalog.standard(bundleId: pipeline.bundleId).premiumMonthly
        let now = Date()
        let id = "77\(String(UInt64(now.timeIntervalSince1970 * 1000)).suffix(14))"
        let transaction = SimFixture.transaction(
            original: id, id: id, purchased: now.addingTimeInterval(-60), token: UUID(), product: product.productId,
            subscriptionGroup: product.subscriptionGroup, price: product.price, bundleId: pipeline.bundleId)
        #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [transaction])) == 201)
        try signer.store.upsert([transaction])
        let notification = try signer.notifications.record(
            SeedNotificationRequest(
                bundleId: pipeline.bundleId, notificationType: .subscribed, subtype: .initialBuy, transactionId: id))
        return ByteBuffer(bytes: try JSONEncoder().encode(["signedPayload": notification.signedPayload]))
    }

    static func post(_ body: ByteBuffer, to url: String, _ http: HTTPClient) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        let response = try await http.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 16)
        return Int(response.status.code)
    }

    /// Hands out 0, 1, 2, … to the posting tasks.
    final class Ticket: Sendable {
        private let value = Atomic<Int>(0)
        func take() -> Int { value.add(1, ordering: .relaxed).oldValue }
    }

    /// Posts `count` times with ``inFlight`` requests at once; returns every status other than 200.
    static func postConcurrently(_ body: ByteBuffer, to url: String, count: Int, _ http: HTTPClient) async throws -> [Int] {
        let next = Ticket()
        return try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    var failures: [Int] = []
                    while next.take() < count {
                        let status = try await post(body, to: url, http)
                        if status != 200 { failures.append(status) }
                    }
                    return failures
                }
            }
            var all: [Int] = []
            for try await failures in group { all += failures }
            return all
        }
    }
}
