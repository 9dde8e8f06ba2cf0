import AppStore
import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import KafkaClient
import PipelineOperations
import PipelineRecords
import PostgresNIO
import RecoveryJobs
import StageRuntime
import TestSupport
import Testing

@Suite("customer: found by each identifier, with notifications, ownership claims and consumption requests", .enabled(if: ScratchDatabase.enabled))
struct CustomerLookupTests {
    static let policy = GrantPolicy(catalog: LifecycleGenerator.catalog, expiryLeeway: 3600, transferPolicy: .refuse)

    /// A purchase Apple names nobody for, uploaded by `owner` and then claimed by `intruder`'s upload,
    /// applied through the entitlement store as grant applies it.
    static func ownedAndClaimed(_ db: ScratchDatabase, owner: UUID, intruder: UUID, original: String) async throws {
        for record in SimulatedPurchase.claimedByAnother(owner: owner, intruder: intruder, originalTransactionId: original, uuidSeed: 21) {
            for result in try await db.store.apply([try GrantEvent(record)], policy: policy) { _ = try result.get() }
        }
    }

    @Test("the owner is found by appAccountToken, transactionId, originalTransactionId and external user ID; the refused claim shows on both sides")
    func everyIdentifier() async throws {
        try await ScratchDatabase.with { db in
            let owner = UUID()
            let intruder = UUID()
            try await Self.ownedAndClaimed(db, owner: owner, intruder: intruder, original: "claim-77")
            try await db.client.query(
                "UPDATE customers SET external_user_id = 'user-77' WHERE customer_id = \(owner.uuidString.lowercased())::uuid",
                logger: ScratchDatabase.logger)
            try await db.client.query(
                """
                INSERT INTO consumption_requests (environment, notification_uuid, transaction_id, original_transaction_id, reason, deadline,
                    status, note)
                SELECT environment, 'cr-77', transaction_id, original_transaction_id, 'UNINTENDED_PURCHASE', now() + interval '12 hours',
                    'skipped', 'no consent' FROM transactions WHERE original_transaction_id = 'claim-77' LIMIT 1
                """, logger: ScratchDatabase.logger)
            var transactionID = ""
            for try await id in try await db.client.query(
                "SELECT transaction_id FROM transactions WHERE original_transaction_id = 'claim-77' LIMIT 1", logger: ScratchDatabase.logger
            ).decode(String.self) { transactionID = id }
            #expect(!transactionID.isEmpty)

            let identifiers: [CustomerIdentifier] = [
                .appAccountToken(owner), .transactionId(transactionID), .originalTransactionId("claim-77"), .externalUserId("user-77"),
            ]
            for identifier in identifiers {
                let found = try await CustomerLookup.customers(identifier, environment: nil, database: db.client, logger: ScratchDatabase.logger)
                #expect(found == [owner], "\(identifier)")
            }
            var environment = ""
            for try await name in try await db.client.query(
                "SELECT environment FROM subscriptions WHERE original_transaction_id = 'claim-77'", logger: ScratchDatabase.logger
            ).decode(String.self) { environment = name }
            #expect(
                try await CustomerLookup.customers(
                    .originalTransactionId("claim-77"), environment: environment, database: db.client,
                    logger: ScratchDatabase.logger) == [owner])
            let other = environment == "Production" ? "Sandbox" : "Production"
            #expect(
                try await CustomerLookup.customers(
                    .originalTransactionId("claim-77"), environment: other, database: db.client,
                    logger: ScratchDatabase.logger
                ).isEmpty)
            #expect(
                try await CustomerLookup.customers(
                    .externalUserId("nobody"), environment: nil, database: db.client,
                    logger: ScratchDatabase.logger
                ).isEmpty)

            let ownerReport = try await CustomerReport.load(customerID: owner, database: db.client, logger: ScratchDatabase.logger)
            #expect(ownerReport.entitlements.count == 1)
            #expect(ownerReport.subscriptions.map(\.originalTransactionId) == ["claim-77"])
            #expect(ownerReport.transactions.map(\.transactionId) == [transactionID])
            #expect(
                Set(ownerReport.ownershipClaims.map { "\($0.customerId) \($0.status)" })
                    == ["\(owner.uuidString.lowercased()) owner", "\(intruder.uuidString.lowercased()) refused"])
            #expect(ownerReport.notifications.map(\.type).sorted() == ["APP_UPLOAD", "APP_UPLOAD", "SUBSCRIBED"])
            #expect(ownerReport.notifications.map(\.outcome).first == "applied")
            #expect(ownerReport.consumptionRequests.map { "\($0.notificationUuid) \($0.status) \($0.note ?? "")" } == ["cr-77 skipped no consent"])

            // The intruder owns nothing, and the report says why: the claim was refused, owned by the owner.
            let intruderReport = try await CustomerReport.load(customerID: intruder, database: db.client, logger: ScratchDatabase.logger)
            #expect(!intruderReport.isEmpty)
            #expect(intruderReport.entitlements.isEmpty && intruderReport.subscriptions.isEmpty)
            let refused = try #require(intruderReport.ownershipClaims.first { $0.customerId == intruder.uuidString.lowercased() })
            #expect(refused.status == "refused")
            #expect(refused.owner == owner.uuidString.lowercased())
            #expect(refused.reason.contains("refused") && refused.reason.contains(owner.uuidString.lowercased()))
            let text = intruderReport.text
            #expect(text.contains("ownership claims:") && text.contains("refused") && text.contains("APP_UPLOAD"))

            // --json: one object with every documented key, null where there is no value.
            let json = try OperatorJSON.encode(intruderReport)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            #expect(
                Set(object.keys) == [
                    "customerId", "entitlements", "subscriptions", "transactions", "balances", "changes", "notifications", "ownershipClaims",
                    "consumptionRequests",
                ])
            let claims = try #require(object["ownershipClaims"] as? [[String: Any]])
            #expect(
                claims.allSatisfy {
                    Set($0.keys) == [
                        "environment", "originalTransactionId", "customerId", "status", "owner", "verified", "firstClaimedAt",
                        "causeEventKey", "reason",
                    ]
                })
            let notifications = try #require(object["notifications"] as? [[String: Any]])
            #expect(
                notifications.allSatisfy {
                    Set($0.keys) == [
                        "environment", "ingestedAt", "verifiedAt", "processedAt", "type", "subtype", "outcome", "note", "source", "eventKey",
                        "originalTransactionId", "transactionId", "traceId",
                    ]
                })
            let requests = try #require(object["consumptionRequests"] as? [[String: Any]])
            #expect(requests.first?["deliveryStatus"] is NSNull, "absent values are null, never left out")
        }
    }
}

@Suite("status: what needs attention")
struct PipelineHealthTests {
    func stage(_ name: String, members: Int?, lags: [Int64?], letters: [DeadLetterCount] = []) -> StageStatus {
        var status = StageStatus(
            stage: .init(
                name: name, groupID: "appstore.\(name)", inputTopic: "\(name).in", outputTopic: nil,
                deadLetterTopic: "\(name).dlq"))
        status.members = members.map { count in
            (0..<count).map { KafkaGroupOffsets.Member(memberID: "m\($0)", clientID: name, host: "/10.0.0.\($0)") }
        }
        status.partitions = lags.enumerated().map { index, lag in
            StageStatus.Partition(partition: Int32(index), committed: 10, earliest: 0, end: 10 + (lag ?? 0), lag: lag)
        }
        status.deadLetters = letters
        return status
    }

    @Test("healthy when every stage with lag has members, no dead letter waits and the outbox is fresh")
    func healthy() throws {
        let health = PipelineHealth(
            stages: [
                stage("verify", members: 1, lags: [4, 0]),
                stage(
                    "grant", members: 0, lags: [0, 0],
                    letters: [.init(code: "x", total: 2, notReplayed: 0)]),
            ],
            outbox: OutboxBacklog(unpublished: 3, oldestCreatedAt: Date(), oldestAgeSeconds: 2), maxOutboxAgeSeconds: 60)
        #expect(health.healthy, "\(health.problems)")
        #expect(health.text.hasSuffix("healthy"))
    }

    @Test("mass extensions are shown a line each, open, finished or refused, and never make the pipeline unhealthy")
    func massExtensions() throws {
        func request(_ id: String, outcome: String, finished: Date?, failed: [String]) -> MassRenewalExtensionStatus {
            MassRenewalExtensionStatus(
                environment: "Sandbox", bundleId: "com.example.app", productId: "com.example.app.streaming", requestIdentifier: id,
                extendByDays: 3, reasonCode: 3, requestedBy: "ops-7", requestedAt: Date().addingTimeInterval(-600), appleOutcome: outcome,
                appleError: outcome == "refused" ? "apple_api.4000023" : nil, reportedComplete: finished,
                reportedSucceededCount: finished == nil ? nil : 4, reportedFailedCount: finished == nil ? nil : 1,
                failedOriginalTransactionIds: failed)
        }
        let health = PipelineHealth(
            stages: [stage("grant", members: 1, lags: [0])], outbox: nil, maxOutboxAgeSeconds: 60,
            massExtensions: [
                request("open-1", outcome: "accepted", finished: nil, failed: ["7402"]),
                request("done-1", outcome: "accepted", finished: Date().addingTimeInterval(-60), failed: ["7402"]),
                request("refused-1", outcome: "refused", finished: nil, failed: []),
            ])
        #expect(health.healthy)
        let lines = health.text.split(separator: "\n").filter { $0.hasPrefix("mass extension ") }
        #expect(lines.count == 3)
        #expect(lines[0].contains("open-1: com.example.app.streaming +3d") && lines[0].contains("open, 1 failure(s) reported so far"))
        #expect(lines[1].contains("done-1") && lines[1].contains("finished") && lines[1].contains("4 extended, 1 failed"))
        #expect(lines[2].contains("refused by Apple (apple_api.4000023)"))
    }

    @Test("a stage whose input could not be read has an unknown lag, never 0, and needs attention")
    func unreadable() throws {
        var grant = stage("grant", members: nil, lags: [])
        grant.partitionsRead = false
        grant.errors = ["lag of grant.in: broker transport failure"]
        let health = PipelineHealth(stages: [grant], outbox: nil, maxOutboxAgeSeconds: 60)
        #expect(grant.lag == nil)
        #expect(health.problems.map(\.kind) == ["unreadable"])
        #expect(health.text.contains("lag unknown, last record unknown") && !health.text.contains("lag 0"))
    }

    @Test("a stopped stage with lag, a dead letter not replayed and an old outbox row each need attention, by name")
    func attention() throws {
        let health = PipelineHealth(
            stages: [
                stage("enrich", members: 0, lags: [7, nil, 2], letters: [.init(code: "apple_api.4040010", total: 3, notReplayed: 1)]),
                stage("grant", members: nil, lags: [5]),
            ],
            outbox: OutboxBacklog(unpublished: 12, oldestCreatedAt: Date().addingTimeInterval(-300), oldestAgeSeconds: 300),
            maxOutboxAgeSeconds: 60)
        #expect(!health.healthy)
        #expect(health.problems.map(\.kind) == ["stalled", "dead_letters", "outbox_backlog"])
        #expect(health.problems[0].stage == "enrich" && health.problems[0].detail.contains("lag 9 (partition 0: 7, partition 2: 2)"))
        #expect(health.problems[1].code == "apple_api.4040010")
        let text = health.text
        #expect(text.contains("stalled: enrich: lag 9") && text.contains("apple_api.4040010") && text.contains("unknown (at least 9)"))

        let object = try #require(try JSONSerialization.jsonObject(with: Data(try OperatorJSON.encode(health).utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["healthy", "checkedAt", "stages", "outbox", "outboxError", "maxOutboxAgeSeconds", "massExtensions", "problems"])
        #expect(object["healthy"] as? Bool == false)
        let stages = try #require(object["stages"] as? [[String: Any]])
        #expect(
            Set(stages[0].keys) == [
                "stage", "group", "inputTopic", "deadLetterTopic", "groupState", "memberCount", "members", "lag", "lastRecordAt", "partitions",
                "unownedPartitions", "deadLetters", "deadLettersNotReplayed", "errors",
            ])
        #expect(stages[0]["lag"] is NSNull, "a partition's unknown lag makes the stage's unknown")
        #expect(stages[1]["memberCount"] is NSNull)
        let partitions = try #require(stages[0]["partitions"] as? [[String: Any]])
        #expect(Set(partitions[0].keys) == ["partition", "committed", "earliest", "end", "lag", "lastRecordAt"])
        let problems = try #require(object["problems"] as? [[String: Any]])
        #expect(problems.allSatisfy { Set($0.keys) == ["kind", "stage", "code", "detail"] })
    }

    /// The local broker once kept a stable group whose member held nothing while 5,468 records
    /// waited: members present, so nothing looked stalled.
    @Test("partitions with lag that no member holds need attention in a stable group; not while it rebalances or when unknown")
    func unowned() throws {
        var verify = stage("verify", members: 2, lags: [3, 0, 5, 0])
        verify.groupState = "Stable"
        verify.members = [
            .init(memberID: "m0", clientID: "verify", host: "/10.0.0.1", assignment: [.init(topic: "verify.in", partition: 1)]),
            .init(memberID: "m1", clientID: "verify", host: "/10.0.0.2", assignment: []),
        ]
        let health = PipelineHealth(stages: [verify], outbox: nil, maxOutboxAgeSeconds: 60)
        #expect(verify.unownedPartitions.map(\.partition) == [0, 2])
        #expect(health.problems.map(\.kind) == ["unowned"])
        #expect(health.problems[0].detail.contains("partition 0: 3, partition 2: 5 waiting, and no member of group appstore.verify holds them"))
        #expect(health.text.contains("verify /10.0.0.1 holding p1") && health.text.contains("verify /10.0.0.2 holding no partition"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(try OperatorJSON.encode(health).utf8)) as? [String: Any])
        let stages = try #require(object["stages"] as? [[String: Any]])
        #expect(stages[0]["unownedPartitions"] as? [Int] == [0, 2])

        var owned = verify
        owned.members?[1].assignment = [.init(topic: "verify.in", partition: 0), .init(topic: "verify.in", partition: 2)]
        #expect(PipelineHealth(stages: [owned], outbox: nil, maxOutboxAgeSeconds: 60).healthy)
        var rebalancing = verify
        rebalancing.groupState = "PreparingRebalance"
        #expect(PipelineHealth(stages: [rebalancing], outbox: nil, maxOutboxAgeSeconds: 60).healthy)
        var unknown = verify
        unknown.members?[0].assignment = nil
        #expect(unknown.unownedPartitions.isEmpty, "without every member's assignment nothing can be said")
    }
}
