import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import PipelineOperations
import PipelineRecords
import PostgresNIO
import RecoveryJobs
import TestSupport
import Testing

/// `appstorectl extend-all` and `extend-status` against the simulated Apple and grant's schema: the
/// request is recorded with who asked and Apple's answer; what Apple then reports
/// (`RENEWAL_EXTENSION/FAILURE`, `/SUMMARY`), applied through grant's store, completes it.
@Suite("mass renewal extension against the simulated Apple and grant's schema", .enabled(if: ScratchDatabase.enabled))
struct MassRenewalExtensionTests {
    /// Apple's notifications of the simulator so far, as verified records through grant's store.
    static func applyNotifications(_ sim: RunningSimulator, _ db: ScratchDatabase, subtypes: Set<NotificationSubtype>) async throws -> Int {
        let history = try await sim.client.notificationHistory(
            NotificationHistoryRequest(startDate: SimFixture.now().addingTimeInterval(-600), endDate: SimFixture.now().addingTimeInterval(60)),
            target: SimFixture.target)
        let records = history.filter {
            $0.notification.payload.notificationType == .renewalExtension && $0.notification.payload.subtype.map(subtypes.contains) == true
        }.map { entry in
            EnrichedRecord(
                verified: VerifiedRecord(
                    notification: entry.notification, signedPayload: entry.signedPayload, source: "apple-webhook", verifiedAt: SimFixture.now()),
                enrichment: Enrichment(lookup: .transactionOnly, fetchedAt: SimFixture.now()))
        }
        let results = try await db.store.apply(try records.map(GrantEvent.init), policy: GrantPolicy())
        for result in results { _ = try result.get() }
        return records.count
    }

    @Test(
        "extend-all records the request and Apple's answer; SUMMARY completes it once, FAILURE is matched to it even after the summary; a refusal is recorded"
    )
    func extendAll() async throws {
        try await ScratchDatabase.with { db in
            try await RunningSimulator.with { sim in
                let now = SimFixture.now()
                try sim.apple.store.upsert([SimFixture.transaction(original: "7401", id: "7401", purchased: now - 5 * 86_400)])
                try sim.apple.store.upsert([SimFixture.transaction(original: "7402", id: "7402", purchased: now - 5 * 86_400)])
                sim.apple.store.setSubscription("7402", SimulatedSubscriptionOverride(status: .billingRetry))
                let job = MassRenewalExtensionJob(client: sim.client, database: db.client, logger: ScratchDatabase.logger)
                let requestID = UUID().uuidString.lowercased()
                let request = MassRenewalExtensionRequest(
                    environment: "Sandbox", bundleId: SimFixture.bundleId, productId: TestPKI.productID, requestIdentifier: requestID,
                    storefrontCountryCodes: ["USA"], extendByDays: 3, reasonCode: 3, requestedBy: "support-1")
                try await job.extendAll(request, target: SimFixture.target)

                var status = try await job.status(requestIdentifier: requestID, target: SimFixture.target)
                #expect(status.count == 1 && status[0].appleOutcome == "accepted" && status[0].requestedBy == "support-1")
                #expect(status[0].storefrontCountryCodes == ["USA"] && status[0].isOpen)
                while status.first?.appleComplete != true {
                    try await Task.sleep(for: .milliseconds(20))
                    status = try await job.status(requestIdentifier: requestID, target: SimFixture.target)
                }
                #expect(status[0].appleSucceededCount == 1 && status[0].appleFailedCount == 1)
                #expect(status[0].reportedComplete == nil, "nothing reported until grant records the notifications")

                // Grant records Apple's reports: SUMMARY completes the request; FAILURE, even when the
                // pipeline brings it after the summary, is matched to it (the newest request of its product).
                #expect(try await Self.applyNotifications(sim, db, subtypes: [.summary]) == 1)
                #expect(try await Self.applyNotifications(sim, db, subtypes: [.failure]) == 1)
                status = try await job.status(requestIdentifier: requestID, target: SimFixture.target)
                #expect(status[0].failedOriginalTransactionIds == ["7402"])
                #expect(status[0].reportedSucceededCount == 1 && status[0].reportedFailedCount == 1)
                #expect(status[0].reportedComplete != nil && !status[0].isOpen)
                // Replayed reports change nothing.
                _ = try await Self.applyNotifications(sim, db, subtypes: [.summary, .failure])
                #expect(try await db.count("SELECT count(*) FROM mass_renewal_extension_failures") == 1)
                #expect(
                    try await job.recorded(environment: "Sandbox")
                        == status.map {
                            var s = $0
                            s.appleComplete = nil
                            s.appleCompleteDate = nil
                            s.appleSucceededCount = nil
                            s.appleFailedCount = nil
                            return s
                        })

                // Apple refuses an unknown product: recorded as refused with Apple's code, never open.
                var unknown = request
                unknown.productId = "com.example.nothing"
                unknown.requestIdentifier = UUID().uuidString.lowercased()
                await #expect(throws: OperationsError.self) { try await job.extendAll(unknown, target: SimFixture.target) }
                let refused = try await job.status(requestIdentifier: unknown.requestIdentifier, target: SimFixture.target)
                #expect(refused.map(\.appleOutcome) == ["refused"])
                #expect(refused.first?.appleError == "apple_api.4000023" && refused.first?.isOpen == false)
                #expect(
                    try await job.status(requestIdentifier: nil, target: SimFixture.target).map(\.requestIdentifier) == [
                        unknown.requestIdentifier, requestID,
                    ])
            }
        }
    }

    @Test(
        "appstorectl extend-all --wait --json and extend-status --json: the request as recorded, Apple's status; bad usage exits 2, an unknown request 1"
    )
    func commands() async throws {
        try await ScratchDatabase.with { db in
            try await RunningSimulator.with { sim in
                try sim.apple.store.upsert([SimFixture.transaction(original: "7501", id: "7501", purchased: SimFixture.now() - 86_400)])
                var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("POSTGRES_") && !$0.key.hasPrefix("APPSTORE_") }
                environment["APPSTORE_APPS"] = "\(SimFixture.bundleId)::Sandbox"
                environment["APPSTORE_TRUSTED_ROOTS"] = try TestPKI.writeRoot(SimFixture.authority).pem
                environment["APPSTORE_API_CREDENTIALS"] =
                    "\(SimFixture.bundleId):\(SimFixture.apiKey.issuerID):\(SimFixture.apiKey.keyID):\(try SimFixture.writeAPIKey())"
                environment["APPSTORE_API_BASE_URL"] = sim.baseURL
                environment["POSTGRES_HOST"] = ScratchDatabase.host
                environment["POSTGRES_PORT"] = "\(ScratchDatabase.port)"
                environment["POSTGRES_DATABASE"] = db.name
                environment["POSTGRES_USER"] = db.configuration.username
                environment["POSTGRES_PASSWORD"] = db.configuration.password
                environment["POSTGRES_TLS"] = "disable"
                func appstorectl(_ arguments: [String]) async throws -> CommandResult {
                    try await BuiltProducts.run("appstorectl", arguments, environment: environment)
                }
                func object(_ line: Substring) throws -> [String: Any] {
                    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                }
                let requestID = UUID().uuidString.lowercased()
                let extended = try await appstorectl([
                    "extend-all", "--app", SimFixture.bundleId, "--product", TestPKI.productID, "--days", "2", "--reason", "1", "--storefronts",
                    "usa", "--request-id", requestID, "--requested-by", "cli-test", "--wait", "--json",
                ])
                #expect(extended.status == 0, "\(extended.output)")
                let request = try object(try #require(extended.stdout.split(separator: "\n").first))
                #expect(request["requestIdentifier"] as? String == requestID && request["storefrontCountryCodes"] as? [String] == ["USA"])

                let shown = try await appstorectl(["extend-status", "--app", SimFixture.bundleId, "--request-id", requestID, "--json"])
                #expect(shown.status == 0, "\(shown.output)")
                let lines = shown.stdout.split(separator: "\n")
                #expect(lines.count == 1)
                let status = try object(try #require(lines.first))
                #expect(status["appleOutcome"] as? String == "accepted" && status["requestedBy"] as? String == "cli-test")
                #expect(status["appleComplete"] as? Bool == true && status["appleSucceededCount"] as? Int == 1)
                #expect(status["reportedComplete"] is NSNull, "no SUMMARY recorded: grant did not run")

                let text = try await appstorectl(["extend-status", "--app", SimFixture.bundleId])
                #expect(text.status == 0 && text.stdout.contains("\(requestID): \(TestPKI.productID) +2d") && text.stdout.contains("no SUMMARY"))
                let unknown = try await appstorectl(["extend-status", "--app", SimFixture.bundleId, "--request-id", UUID().uuidString])
                #expect(unknown.status == 1 && unknown.stderr.contains("ops.mass_extension_not_found"))
                let bad = try await appstorectl([
                    "extend-all", "--app", SimFixture.bundleId, "--product", TestPKI.productID, "--days", "91", "--reason", "1",
                ])
                #expect(bad.status == 2)
            }
        }
    }
}
