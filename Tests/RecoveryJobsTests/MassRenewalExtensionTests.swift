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
    static func applyNotifications(_ sim: RunningSimulator, _ db: ScratchDatabase, types: Set<NotificationType>) async throws -> Int {
        let history = try await sim.client.notificationHistory(
            NotificationHistoryRequest(startDate: SimFixture.now().addingTimeInterval(-600), endDate: SimFixture.now().addingTimeInterval(60)),
            target: SimFixture.target)
        let records = history.filter { $0.notification.payload.notificationType.map(types.contains) == true }.map { entry in
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
        "extend-all records the request and Apple's answer; FAILURE is matched to the open request of its product, SUMMARY completes it once; a refusal is recorded"
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

                // Grant records Apple's reports: FAILURE against the open request, SUMMARY completes it.
                #expect(try await Self.applyNotifications(sim, db, types: [.renewalExtension]) == 2)
                status = try await job.status(requestIdentifier: requestID, target: SimFixture.target)
                #expect(status[0].failedOriginalTransactionIds == ["7402"])
                #expect(status[0].reportedSucceededCount == 1 && status[0].reportedFailedCount == 1)
                #expect(status[0].reportedComplete != nil && !status[0].isOpen)
                // Replayed reports change nothing.
                _ = try await Self.applyNotifications(sim, db, types: [.renewalExtension])
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
}
