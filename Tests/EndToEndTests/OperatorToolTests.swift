import AppStore
import AppStoreSimulator
import AsyncHTTPClient
import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import KafkaClient
import NIOCore
import NIOHTTP1
import PipelineRecords
import PostgresNIO
import SimulatedDelivery
import SimulatorLifecycleRoutes
import StageRuntime
import TestSupport
import Testing

/// `appstorectl status`, `customer` and every command's `--json` as the operator runs them: the built
/// `appstorectl` (`BuiltProducts`) against the whole pipeline, its own topics, groups and database.
@Suite(
    "appstorectl status, customer and --json against the whole pipeline",
    .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized, .timeLimit(.minutes(15)))
struct OperatorToolTests {
    /// Runs a `--json` command: its exit status and standard output parsed as one JSON object.
    static func json(_ arguments: [String], _ pipeline: PipelineUnderTest) async throws -> (Int32, [String: Any]) {
        let result = try await pipeline.appstorectl(arguments)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1, "--json prints exactly one line: \(result.stdout)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return (result.status, try #require(object, "\(arguments) printed \(result.stdout)"))
    }

    /// Repeats `appstorectl` until `done` holds for its result or `timeout` passes; returns the last result.
    static func until(
        _ arguments: [String], _ pipeline: PipelineUnderTest, timeout: Duration = .seconds(90), _ done: (CommandResult) -> Bool
    )
        async throws -> CommandResult
    {
        let deadline = ContinuousClock.now + timeout
        var result = try await pipeline.appstorectl(arguments)
        while !done(result), ContinuousClock.now < deadline {
            try await Task.sleep(for: .seconds(2))
            result = try await pipeline.appstorectl(arguments)
        }
        return result
    }

    static func keys(_ object: Any?) -> Set<String> { Set((object as? [String: Any])?.keys.map { $0 } ?? []) }

    static let customerKeys: Set<String> = [
        "customerId", "entitlements", "subscriptions", "transactions", "balances", "changes", "notifications", "ownershipClaims",
        "consumptionRequests",
    ]
    static let deadLetterKeys: Set<String> = [
        "partition", "offset", "code", "reason", "stage", "attempts", "firstFailureAt", "lastFailureAt", "source", "sourceTopic", "replayed", "key",
    ]

    @Test("status: healthy (0), a dead letter by code (1), a stopped stage with its lag (1); customer by every identifier; --json of every command")
    func operatorTool() async throws {
        try await PipelineUnderTest.with { pipeline in
            var request = LifecycleRunRequest(customers: 12, webhook: "")
            request.seed = 1313
            try await pipeline.play(request)
            _ = try await pipeline.waitUntilDrained(timeout: .seconds(300))

            // Healthy: every stage has its member, nothing waits in a DLQ, the outbox is published.
            let healthy = try await Self.until(["status"], pipeline) { $0.status == 0 }
            #expect(healthy.status == 0, "\(healthy.output)")
            #expect(healthy.stdout.hasSuffix("healthy\n"))
            let (healthyCode, status) = try await Self.json(["status", "--json"], pipeline)
            #expect(healthyCode == 0)
            #expect(
                Self.keys(status) == ["healthy", "checkedAt", "stages", "outbox", "outboxError", "maxOutboxAgeSeconds", "massExtensions", "problems"])
            #expect(status["healthy"] as? Bool == true)
            let stages = try #require(status["stages"] as? [[String: Any]])
            #expect(stages.map { $0["stage"] as? String } == ["verify", "enrich", "grant"])
            for stage in stages {
                #expect(
                    Self.keys(stage) == [
                        "stage", "group", "inputTopic", "deadLetterTopic", "groupState", "memberCount", "members", "lag", "lastRecordAt",
                        "partitions", "unownedPartitions", "deadLetters", "deadLettersNotReplayed", "errors",
                    ])
                #expect((stage["memberCount"] as? Int ?? 0) >= 1, "\(stage)")
                #expect(stage["lastRecordAt"] is String, "every input received records")
            }
            #expect(Self.keys(status["outbox"]) == ["unpublished", "oldestCreatedAt", "oldestAgeSeconds"])

            // customer, found by each identifier: token, transactionId, originalTransactionId, order ID, external user ID.
            let (token, original, transaction) = try await pipeline.withDatabase { client in
                let rows = try await client.query(
                    """
                    SELECT s.owner_customer_id::text, s.original_transaction_id, t.transaction_id
                    FROM subscriptions s JOIN transactions t USING (environment, original_transaction_id)
                    WHERE s.owner_customer_id IS NOT NULL
                    ORDER BY (t.transaction_id <> s.original_transaction_id) DESC, t.purchase_date DESC LIMIT 1
                    """, logger: ScratchDatabase.logger)
                for try await row in rows.decode((String, String, String).self) { return row }
                throw TestSupportError("no owned purchase in the run")
            }
            try await pipeline.withDatabase { client in
                try await client.query(
                    "UPDATE customers SET external_user_id = 'support-4711' WHERE customer_id = \(token)::uuid", logger: ScratchDatabase.logger)
            }
            #expect(try await pipeline.post("/sim/orders", json: SeedOrderRequest(orderId: "MQ1313TEST", transactionIds: [transaction])) == 201)
            let lookups: [(String, [String])] = [
                ("appAccountToken", [token]), ("transactionId", ["--transaction-id", transaction]),
                ("originalTransactionId", ["--original-transaction-id", original]),
                ("orderId", ["--order-id", "MQ1313TEST", "--app", pipeline.bundleId]), ("externalUserId", ["--external-user-id", "support-4711"]),
            ]
            for (by, arguments) in lookups {
                let (code, found) = try await Self.json(["customer"] + arguments + ["--json"], pipeline)
                #expect(code == 0, "\(by)")
                #expect(Self.keys(found) == ["lookup", "customers"])
                #expect((found["lookup"] as? [String: Any])?["by"] as? String == by)
                let customers = try #require(found["customers"] as? [[String: Any]])
                #expect(customers.map { $0["customerId"] as? String } == [token.lowercased()], "\(by)")
                #expect(customers.allSatisfy { Self.keys($0) == Self.customerKeys })
                #expect((customers.first?["notifications"] as? [Any])?.isEmpty == false, "the timeline of \(by)")
            }
            let shown = try await pipeline.appstorectl(["customer", "--original-transaction-id", original])
            #expect(shown.status == 0)
            #expect(shown.stdout.contains("customer \(token.lowercased())") && shown.stdout.contains("notifications (timeline):"))
            #expect(try await pipeline.appstorectl(["customer", "--transaction-id", "no-such-transaction"]).status == 1)
            #expect(try await pipeline.appstorectl(["customer", token, "--transaction-id", transaction]).status == 2)

            // A refused ownership claim, produced as grant produces one: a second customer's claim on an owned purchase.
            let owner = UUID()
            let intruder = UUID()
            try await pipeline.withDatabase { client in
                let store = EntitlementStore(client: client, logger: ScratchDatabase.logger)
                let policy = GrantPolicy(catalog: LifecycleGenerator.catalog, expiryLeeway: 3600, transferPolicy: .refuse)
                let records = SimulatedPurchase.claimedByAnother(
                    owner: owner, intruder: intruder, originalTransactionId: "e2e-claim-\(pipeline.id)", uuidSeed: 31)
                for record in records {
                    for result in try await store.apply([try GrantEvent(record)], policy: policy) { _ = try result.get() }
                }
            }
            let (refusedCode, refused) = try await Self.json(["customer", intruder.uuidString, "--json"], pipeline)
            #expect(refusedCode == 0)
            let claims = ((refused["customers"] as? [[String: Any]])?.first?["ownershipClaims"] as? [[String: Any]]) ?? []
            let intruderClaim = claims.first { $0["customerId"] as? String == intruder.uuidString.lowercased() }
            #expect(intruderClaim?["status"] as? String == "refused", "\(claims)")
            #expect(intruderClaim?["owner"] as? String == owner.uuidString.lowercased())
            let claimText = try await pipeline.appstorectl(["customer", "--original-transaction-id", "e2e-claim-\(pipeline.id)"])
            #expect(claimText.stdout.contains("customer \(owner.uuidString.lowercased())"))
            #expect(claimText.stdout.contains("refused: the purchase belongs to \(owner.uuidString.lowercased())"))

            // A dead letter: a body ingest stores and verify refuses.
            var post = HTTPClientRequest(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v2/notifications")
            post.method = .POST
            post.headers.add(name: "Content-Type", value: "application/json")
            post.body = .bytes(ByteBuffer(string: #"{"signedPayload":"not.a.jws"}"#))
            let response = try await LocalHTTP.client.execute(post, timeout: LocalHTTP.patience)
            #expect(response.status.code == 200)
            let withLetter = try await Self.until(["status"], pipeline) { $0.stdout.contains("dead_letters:") }
            #expect(withLetter.status == 1, "\(withLetter.output)")
            let (listCode, list) = try await Self.json(["dlq", "list", "--stage", "verify", "--json"], pipeline)
            #expect(listCode == 0)
            #expect(Self.keys(list) == ["stage", "topic", "total", "notReplayed", "byCode", "deadLetters"])
            #expect(list["total"] as? Int == 1 && list["notReplayed"] as? Int == 1)
            let letter = try #require((list["deadLetters"] as? [[String: Any]])?.first)
            #expect(Self.keys(letter) == Self.deadLetterKeys)
            let code = try #require(letter["code"] as? String)
            #expect(withLetter.stdout.contains("dead_letters: verify: 1 dead letter(s) with code \(code) not yet replayed"))
            let (showCode, show) = try await Self.json(
                [
                    "dlq", "show", "--stage", "verify", "--partition", "\(letter["partition"] as? Int ?? -1)", "--offset",
                    "\(letter["offset"] as? Int ?? -1)",
                    "--json",
                ], pipeline)
            #expect(showCode == 0)
            #expect(Self.keys(show) == Self.deadLetterKeys.union(["headers", "body"]))
            #expect((show["body"] as? String)?.contains("not.a.jws") == true)
            #expect((show["headers"] as? [String: String])?["dlq-error-code"] == code)

            // --dry-run: what would be sent; nothing sent (verify would dead-letter it again), nothing remembered.
            let (dryCode, dry) = try await Self.json(["dlq", "replay", "--stage", "verify", "--dry-run", "--json"], pipeline)
            #expect(dryCode == 0)
            #expect(Self.keys(dry) == ["stage", "dryRun", "replayed", "skipped"])
            #expect(dry["dryRun"] as? Bool == true && (dry["replayed"] as? [Any])?.count == 1)
            let (_, afterDry) = try await Self.json(["dlq", "list", "--stage", "verify", "--json"], pipeline)
            #expect(afterDry["total"] as? Int == 1 && afterDry["notReplayed"] as? Int == 1, "a dry run remembers nothing")

            // --code is remembered: the same replay again sends nothing.
            let (firstCode, first) = try await Self.json(["dlq", "replay", "--stage", "verify", "--code", code, "--json"], pipeline)
            #expect(firstCode == 0 && (first["replayed"] as? [Any])?.count == 1 && first["dryRun"] as? Bool == false)
            // The real replay is the marker: sent after the dry run down the same path (raw → verify → its
            // dead letters), once it is back as a new dead letter whatever the dry run had sent would be too.
            let markerDeadline = ContinuousClock.now + .seconds(120)
            var afterReplay = try await Self.json(["dlq", "list", "--stage", "verify", "--json"], pipeline).1
            while afterReplay["total"] as? Int ?? 0 < 2, ContinuousClock.now < markerDeadline {
                try await Task.sleep(for: .milliseconds(500))
                afterReplay = try await Self.json(["dlq", "list", "--stage", "verify", "--json"], pipeline).1
            }
            #expect(afterReplay["total"] as? Int == 2, "the replay came back and nothing from the dry run: \(afterReplay)")
            // The replayed record fails in verify again and comes back as a new dead letter (with dlq-replayed-from);
            // the second run may take that new one, never the one the first run took.
            let (_, second) = try await Self.json(["dlq", "replay", "--stage", "verify", "--code", code, "--json"], pipeline)
            let taken = ((second["replayed"] as? [[String: Any]]) ?? []).map { "\($0["partition"] ?? "")/\($0["offset"] ?? "")" }
            #expect(!taken.contains("\(letter["partition"] ?? "")/\(letter["offset"] ?? "")"), "\(second)")
            #expect(second["skipped"] as? Int ?? 0 >= 1)

            // A stage stopped with records waiting: named, with its lag.
            _ = await pipeline.processes["grant"]?.terminate()
            let producer = try TestServices.makeProducer()
            for i in 0..<4 {
                _ = try await producer.send(
                    KafkaOutgoingMessage(
                        topic: pipeline.topics[Topics.enriched]!, key: Array("Sandbox:waiting-\(i)".utf8), value: Array("{}".utf8), partition: 0))
            }
            await producer.close()
            let stalled = try await Self.until(["status"], pipeline) { $0.stdout.contains("stalled: grant") }
            #expect(stalled.status == 1, "\(stalled.output)")
            #expect(stalled.stdout.contains("stalled: grant: lag 4 (partition 0: 4) and no member in group"), "\(stalled.stdout)")
            let (stalledCode, stalledJSON) = try await Self.json(["status", "--json", "--stage", "grant"], pipeline)
            #expect(stalledCode == 1)
            let grant = try #require((stalledJSON["stages"] as? [[String: Any]])?.first)
            #expect(grant["memberCount"] as? Int == 0 && grant["lag"] as? Int == 4)
            let problems = (stalledJSON["problems"] as? [[String: Any]]) ?? []
            #expect(problems.contains { $0["kind"] as? String == "stalled" && $0["stage"] as? String == "grant" })

            // The other commands' --json.
            let (replayCode, replay) = try await Self.json(["replay", "--stage", "grant", "--from", "36h", "--dry-run", "--json"], pipeline)
            #expect(replayCode == 0)
            #expect(
                Self.keys(replay) == [
                    "stage", "group", "topic", "from", "fromTime", "fromOffset", "dryRun", "applied", "recordsToReprocess", "partitions",
                ])
            #expect(replay["from"] as? String == "time" && replay["applied"] as? Bool == false)
            let fromTime = try #require(
                (replay["fromTime"] as? String).flatMap { try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse($0) })
            #expect(abs(fromTime.timeIntervalSinceNow + 36 * 3600) < 300, "36h before now: \(fromTime)")
            #expect((replay["partitions"] as? [[String: Any]])?.allSatisfy { Self.keys($0) == ["partition", "committed", "target"] } == true)

            let (reconcileCode, reconcile) = try await Self.json(
                ["reconcile", "--app", pipeline.bundleId, "--dry-run", "--json"], pipeline)
            #expect(reconcileCode == 0)
            #expect(Self.keys(reconcile) == ["dryRun", "leewaySeconds", "overdue", "items", "queued", "failed"])

            let (backfillCode, backfill) = try await Self.json(["backfill", "--app", pipeline.bundleId, "--since", "29d", "--json"], pipeline)
            #expect(backfillCode == 0)
            #expect(
                Self.keys(backfill) == [
                    "app", "environment", "since", "until", "onlyFailures", "topic", "fetched", "written", "undelivered", "byType",
                ])
            #expect((backfill["fetched"] as? Int ?? 0) > 0 && backfill["fetched"] as? Int == backfill["written"] as? Int)

            let (orderCode, order) = try await Self.json(["lookup-order", "MQ1313TEST", "--app", pipeline.bundleId, "--json"], pipeline)
            #expect(orderCode == 0)
            #expect(Self.keys(order) == ["orderId", "app", "environment", "transactions", "customers", "customerErrors", "fed"])
            #expect((order["transactions"] as? [[String: Any]])?.map { $0["transactionId"] as? String } == [transaction])
            #expect((order["customers"] as? [[String: Any]])?.first?["customerId"] as? String == token.lowercased())

            let (testCode, test) = try await Self.json(["test-notification", "--app", pipeline.bundleId, "--timeout", "2", "--json"], pipeline)
            #expect(testCode == 1, "without a webhook the simulator delivers nothing")
            #expect(Self.keys(test) == ["app", "environment", "topic", "token", "notificationUUID", "sendAttempts", "verifiedAt", "arrived"])
            #expect(test["arrived"] as? Bool == false)
        }
    }
}
