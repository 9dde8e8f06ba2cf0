import AppStoreSimulator
import Foundation
import GrantTestSupport
import PostgresNIO
import SimulatedCustomers
import SimulatedDelivery
import SimulatorLifecycleRoutes
import TestSupport
import Testing

/// End to end on the real broker and Postgres: the simulated Apple plays customers' lifecycles to
/// ingest, and the entitlements grant leaves in Postgres must equal the simulator's ground truth.
@Suite(
    "End to end: simulated customers through all four stages",
    .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized, .timeLimit(.minutes(15)))
struct EndToEndTests {
    static var customers: Int { Int(ProcessInfo.processInfo.environment["E2E_CUSTOMERS"] ?? "") ?? 500 }

    @Test("≥ 500 customers with duplicated, delayed and reordered deliveries end exactly as the simulator says")
    func groundTruth() async throws {
        try await PipelineUnderTest.with { pipeline in
            var request = LifecycleRunRequest(customers: Self.customers, webhook: "")
            request.seed = 2026
            request.duplicateRate = 0.15
            request.maxDelayMs = 400
            request.reorderWindow = 16
            let started = ContinuousClock.now
            try await pipeline.play(request)
            let run = try await pipeline.waitUntilDrained(timeout: .seconds(600))
            let report = try #require(run.report)
            // The refunds whose REFUND never reached the webhook come from the refund sweep.
            let swept = try await pipeline.sweepRefunds(timeout: .seconds(300))
            #expect(pipeline.sweepProblems(swept, run) == [])
            let mismatches = try await pipeline.mismatches(run)
            let logged = try await pipeline.loggedEvents()
            print(
                "end to end: \(run.customers.count) customers, \(report.notifications) notifications (+\(report.duplicates) duplicates, "
                    + "\(report.uploads) uploads) in \(ContinuousClock.now - started); logged \(logged); "
                    + "lost = \(try await pipeline.unrecorded(report).count); mismatches = \(mismatches.count)")
            #expect(run.customers.count >= 500 || Self.customers < 500)
            #expect(report.duplicates > 0)
            #expect(mismatches.isEmpty, "\(mismatches.prefix(5).joined(separator: "\n"))")

            // Every consumption request of the opted-in app answered once, from grant's records.
            let consumption = try await pipeline.consumptionAnswers(timeout: .seconds(120))
            print("consumption requests: \(consumption.requests.count), answered at Apple: \(consumption.answered.count)")
            #expect(!consumption.requests.isEmpty, "the lifecycles include refund requests")
            #expect(consumption.requests.values.allSatisfy { $0 == "sent" }, "\(consumption.requests.filter { $0.value != "sent" })")
            #expect(consumption.answered == consumption.requests.keys.sorted())

            // Every event carries its ingested-at through the stages: the latency's start.
            let untimed = try await pipeline.withDatabase { client in
                var count = -1
                let rows = try await client.query(
                    "SELECT count(*)::int FROM notifications WHERE ingested_at IS NULL OR ingested_at > processed_at",
                    logger: ScratchDatabase.logger)
                for try await n in rows.decode(Int.self) { count = n }
                return count
            }
            #expect(untimed == 0, "events without ingest's time, or written before it")

            // Every record the run produced (raw, verified, enriched, change events) against its JSON Schema.
            let schemas = try await pipeline.validateRecords()
            print("schemas: \(schemas.counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")) records validated")
            #expect(schemas.counts.count == 4 && schemas.counts.values.allSatisfy { $0 > 0 }, "every kind read: \(schemas.counts)")
            #expect(schemas.problems.isEmpty, "\(schemas.problems.prefix(10).joined(separator: "\n"))")

            // Replay: grant reset to the beginning of its input and run again changes nothing.
            let before = try await pipeline.dump()
            try await pipeline.replayGrant()
            let after = try await pipeline.dump()
            for (table, rows) in before { #expect(after[table] == rows, "table \(table) changed when grant replayed its input") }
            print("replay: grant re-ran its whole input; \(before.count) tables unchanged: \(before == after)")
        }
    }
}
