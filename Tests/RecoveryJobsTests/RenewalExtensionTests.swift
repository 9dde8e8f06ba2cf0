import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Foundation
import GrantTestSupport
import KafkaClient
import PipelineOperations
import PipelineRecords
import PostgresNIO
import RecoveryJobs
import StageRuntime
import TestSupport
import Testing

/// `appstorectl extend` against the simulated Apple and grant's schema: Apple moves the end and
/// announces it (`RENEWAL_EXTENDED`), the request is recorded with who asked, and the subscription
/// as Apple now signs it reaches the pipeline.
@Suite("renewal extension against the simulated Apple and grant's schema", .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled))
struct RenewalExtensionTests {
    static func rows(_ db: ScratchDatabase) async throws -> [(String, String, String, String?)] {
        var result: [(String, String, String, String?)] = []
        let rows = try await db.client.query(
            "SELECT request_identifier, requested_by, outcome, apple_error FROM renewal_extensions ORDER BY requested_at",
            logger: ScratchDatabase.logger)
        for try await row in rows.decode((String, String, String, String?).self) { result.append(row) }
        return result
    }

    @Test(
        "an extension moves the end by the days asked, is recorded with who asked, announced by RENEWAL_EXTENDED and fed; a refusal is recorded too")
    func extendOne() async throws {
        try await ScratchDatabase.with { db in
            try await RunningSimulator.with { sim in
                let now = SimFixture.now()
                let purchased = now - 5 * 86_400
                try sim.apple.store.upsert([SimFixture.transaction(original: "7301", id: "7301", purchased: purchased)])
                var family = SimFixture.transaction(original: "7302", id: "7302", purchased: purchased)
                family.inAppOwnershipType = .familyShared
                try sim.apple.store.upsert([family])
                let verified = try await TestServices.makeTopic("extend-verified", partitions: 2)
                let producer = try TestServices.makeProducer()
                let job = RenewalExtensionJob(client: sim.client, database: db.client, logger: ScratchDatabase.logger)

                let result = try await job.extend(
                    originalTransactionId: "7301", days: 7, reasonCode: 3, requestIdentifier: "outage-2026-11-27", requestedBy: "support-1",
                    target: SimFixture.target, producer: producer, verifiedTopic: verified)
                let newEnd = purchased.addingTimeInterval(37 * 86_400)
                #expect(result.effectiveDate.map { abs($0.timeIntervalSince(newEnd)) < 0.002 } == true)
                #expect(result.fed == "Sandbox:7301")
                let records = try await TopicReader.read(verified) { $0.count >= 1 }
                let record = try VerifiedRecord.decode(try #require(records.first).value)
                #expect(record.transaction?.expiresDate == result.effectiveDate)
                let announced = sim.apple.store.notifications(bundleId: SimFixture.bundleId).filter { $0.notificationType == .renewalExtended }
                #expect(announced.map(\.originalTransactionId) == ["7301"])

                // Apple refuses a family member's subscription: recorded as refused with Apple's code.
                await #expect(throws: OperationsError.self) {
                    try await job.extend(
                        originalTransactionId: "7302", days: 7, reasonCode: 1, requestIdentifier: "goodwill-7302", requestedBy: "support-2",
                        target: SimFixture.target, producer: producer, verifiedTopic: verified)
                }
                await producer.close()
                let rows = try await Self.rows(db)
                #expect(rows.map(\.0) == ["outage-2026-11-27", "goodwill-7302"])
                #expect(rows.map(\.1) == ["support-1", "support-2"])
                #expect(rows.map(\.2) == ["extended", "refused"])
                #expect(rows[1].3 == "apple_api.4030007")
            }
        }
    }
}
