import AppStore
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import GrantTestSupport
import NIOCore
import NIOHTTP1
import PostgresNIO
import SimulatedCustomers
import TestSupport
import Testing

/// Apple re-assigning a purchase's `appAccountToken` (Set App Account Token, through `appstorectl
/// bind` against the simulated Apple): the newest Apple-signed token owns the purchase under the
/// default policy, the move is recorded with its cause, published, and who asked is on record.
@Suite(
    "Apple's token changes move a purchase: appstorectl bind end to end",
    .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized, .timeLimit(.minutes(15)))
struct TokenReassignmentTests {
    @Test("bind: the entitlement moves to the customer Apple now names; the change is recorded, published and attributed; Apple's refusals are typed")
    func bindMovesThePurchase() async throws {
        try await PipelineUnderTest.with { pipeline in
            let apple = try SimulatedApple(stateDirectory: pipeline.stateDirectory)
            let signer = try apple.authority.makeSigner()
            let product = SimulationCatalog.standard(bundleId: pipeline.bundleId).lifetime
            let purchased = Date().addingTimeInterval(-86_400)
            let id = "87\(String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(14))"
            let first = UUID()
            let second = UUID()
            var transaction = SimFixture.transaction(
                original: id, id: id, purchased: purchased, type: .nonConsumable, token: first, product: product.productId,
                price: product.price, bundleId: pipeline.bundleId)
            transaction.signedDate = Date().addingTimeInterval(-60)
            #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [transaction])) == 201)
            // The app uploads the purchase; Apple's token names the first customer.
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v1/transactions")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(["signedTransaction": try signer.sign(transaction)])))
            #expect(try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience).status.code == 200)
            try await Self.waitFor(pipeline) { try await $0.entitlements()[first.uuidString.lowercased()]?[product.entitlement] != nil }

            // Support binds the purchase to the second customer at Apple.
            let bound = try await pipeline.appstorectl([
                "bind", "--customer", second.uuidString, "--original-transaction-id", id, "--app", pipeline.bundleId,
                "--environment", "Sandbox", "--requested-by", "support-4711", "--json",
            ])
            #expect(bound.status == 0, "\(bound.output)")
            let answer = try JSONSerialization.jsonObject(with: Data(bound.stdout.utf8)) as? [String: Any]
            #expect(answer?["customerId"] as? String == second.uuidString.lowercased())
            #expect(answer?["requestedBy"] as? String == "support-4711")
            try await Self.waitFor(pipeline) { try await $0.entitlements()[second.uuidString.lowercased()]?[product.entitlement] != nil }

            let owned = try await pipeline.entitlements()
            #expect(owned[first.uuidString.lowercased()]?[product.entitlement] == nil, "the first customer lost it: \(owned)")
            let facts = try await pipeline.withDatabase { client in
                func one(_ query: PostgresQuery) async throws -> String {
                    var text = ""
                    for try await value in try await client.query(query, logger: ScratchDatabase.logger).decode(String.self) { text = value }
                    return text
                }
                return [
                    try await one(
                        "SELECT string_agg(customer_id::text || ':' || status || ':' || verified::text, ',' ORDER BY status) FROM ownership_claims WHERE original_transaction_id = \(id)"
                    ),
                    try await one(
                        "SELECT string_agg(change || ':' || reason, ',' ORDER BY seq) FROM entitlement_changes WHERE customer_id = \(first)"),
                    try await one("SELECT requested_by || ':' || outcome FROM token_bindings WHERE original_transaction_id = \(id)"),
                    try await one("SELECT coalesce(string_agg(note, ' | '), '') FROM notifications WHERE note LIKE '%owner changed%'"),
                ]
            }
            #expect(facts[0] == "\(second.uuidString.lowercased()):owner:true,\(first.uuidString.lowercased()):superseded:true", "\(facts)")
            #expect(facts[1].hasPrefix("granted:") && facts[1].hasSuffix(",revoked:transferred"), "\(facts)")
            #expect(facts[2] == "support-4711:set")
            #expect(facts[3].contains("Apple's newer token"), "\(facts)")
            // Published: the outbox drains to the changes topic (rows are deleted once the broker acknowledged them).
            try await Self.waitFor(pipeline) { pipeline in
                try await pipeline.withDatabase { client in
                    var n = 1
                    for try await c in try await client.query("SELECT count(*)::int FROM outbox", logger: ScratchDatabase.logger).decode(Int.self) {
                        n = c
                    }
                    return n == 0
                }
            }

            // Apple's rules, typed: an ID Apple does not know; then the binding is recorded as refused.
            let unknown = try await pipeline.appstorectl([
                "bind", "--customer", first.uuidString, "--original-transaction-id", "1999999999999999", "--app", pipeline.bundleId,
                "--environment", "Sandbox", "--requested-by", "support-4711",
            ])
            #expect(unknown.status == 1)
            #expect(unknown.output.contains("apple_api.4040010"), "\(unknown.output)")
            let refusals = try await pipeline.withDatabase { client in
                var n = 0
                for try await c in try await client.query(
                    "SELECT count(*)::int FROM token_bindings WHERE outcome = 'refused' AND apple_error = 'apple_api.4040010'",
                    logger: ScratchDatabase.logger
                ).decode(Int.self) { n = c }
                return n
            }
            #expect(refusals == 1)
        }
    }

    @Test("a purchase whose history answers 404 (4040010) twice ends with the right entitlement and no dead letter")
    func historyNotVisibleYet() async throws {
        try await PipelineUnderTest.with { pipeline in
            let apple = try SimulatedApple(stateDirectory: pipeline.stateDirectory)
            let signer = try apple.authority.makeSigner()
            let product = SimulationCatalog.standard(bundleId: pipeline.bundleId).lifetime
            let id = "85\(String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(14))"
            let customer = UUID()
            var transaction = SimFixture.transaction(
                original: id, id: id, purchased: Date().addingTimeInterval(-60), type: .nonConsumable, token: customer,
                product: product.productId, price: product.price, bundleId: pipeline.bundleId)
            transaction.signedDate = Date().addingTimeInterval(-30)
            #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [transaction])) == 201)
            // Apple has just signed the purchase; its history does not show it for the next two lookups.
            #expect(try await pipeline.post("/sim/faults", json: FaultPlan(historyNotVisibleLookups: 2), method: .PUT) == 200)
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v1/transactions")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(["signedTransaction": try signer.sign(transaction)])))
            #expect(try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience).status.code == 200)
            try await Self.waitFor(pipeline) { try await $0.entitlements()[customer.uuidString.lowercased()]?[product.entitlement] != nil }

            let stats = try AppStoreJSON.decoder.decode(SimulatorStatistics.self, from: try await pipeline.get("/sim/stats"))
            #expect(stats.historyNotVisible == 2, "the history answered 404 twice: \(stats)")
            #expect(await pipeline.metric(.enrich, "pipeline_messages_dead_lettered_total") == 0)
            #expect(await pipeline.metric(.enrich, "pipeline_records_parked_total") >= 2, "set aside while the history caught up, not dead-lettered")
        }
    }

    static func waitFor(_ pipeline: PipelineUnderTest, _ done: (PipelineUnderTest) async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(240)
        while try await !done(pipeline) {
            guard ContinuousClock.now < deadline else { throw TestSupportError("the pipeline did not get there in 240 s") }
            try await Task.sleep(for: .milliseconds(300))
        }
    }
}
