import AppStoreSimulator
import Foundation
import GrantTestSupport
import NIOHTTP1
import SimulatedDelivery
import SimulatorLifecycleRoutes
import StageRuntime
import TestSupport
import Testing

/// The operator tool's recovery subcommands run as the `appstorectl` process against the whole
/// pipeline and the simulated Apple (the built products, found by `BuiltProducts`).
@Suite(
    "appstorectl recovery against the whole pipeline",
    .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized, .timeLimit(.minutes(15)))
struct RecoveryToolTests {
    static var customers: Int { Int(ProcessInfo.processInfo.environment["RECOVERY_CUSTOMERS"] ?? "") ?? 60 }

    @Test("test-notification: the simulator POSTs the TEST notification to ingest and it arrives on the verified topic")
    func testNotificationArrives() async throws {
        try await PipelineUnderTest.with { pipeline in
            let refused = try await pipeline.appstorectl(["test-notification", "--app", pipeline.bundleId, "--timeout", "3"]).status
            #expect(refused == 1, "without a webhook the simulator delivers nothing, so nothing arrives")
            let code = try await pipeline.post(
                "/sim/webhook", json: WebhookSetting(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v2/notifications"), method: .PUT)
            #expect(code == 200)
            let traced = try await pipeline.appstorectl(["test-notification", "--app", pipeline.bundleId, "--timeout", "60"])
            #expect(traced.status == 0, "\(traced.output)")
            #expect(traced.output.contains("arrived:"))
            #expect(traced.output.contains("Apple's send attempts: SUCCESS"), "the simulator records its delivery as a send attempt")
        }
    }

    @Test("10 % of notifications never delivered: backfill --only-failures and reconcile restore the ground truth")
    func recoveryAfterDrops() async throws {
        try await PipelineUnderTest.with { pipeline in
            var request = LifecycleRunRequest(customers: Self.customers, webhook: "")
            request.seed = 61
            request.dropRate = 0.1
            request.duplicateRate = 0.05
            request.maxDelayMs = 100
            try await pipeline.play(request)
            let run = try await pipeline.waitUntilDrained(timeout: .seconds(600))
            let report = try #require(run.report)
            let before = try await pipeline.mismatches(run)
            print("recovery: \(report.notifications) notifications, \(report.dropped) dropped; \(before.count) customer(s) wrong before recovery")
            #expect(report.dropped > 0)

            // Reconcile first: the subscriptions left running past their end are queued, enrich fetches
            // their truth, and grant applies it, after which none is overdue any more.
            let reconcileArguments = ["reconcile", "--app", pipeline.bundleId, "--leeway-seconds", "\(pipeline.leeway)"]
            let reconcile = try await pipeline.appstorectl(reconcileArguments)
            #expect(reconcile.status == 0, "\(reconcile.output)")
            var repaired = false
            let repairDeadline = ContinuousClock.now + .seconds(90)
            while !repaired, ContinuousClock.now < repairDeadline {
                try await Task.sleep(for: .seconds(1))
                let dryRun = try await pipeline.appstorectl(reconcileArguments + ["--dry-run"]).output
                repaired = dryRun.contains("\n0 overdue subscription(s)")
            }
            #expect(repaired, "reconciled subscriptions are still overdue after enrich and grant had 90 s")

            // Sandbox keeps 30 days of notification history; the simulated lifecycles fit well inside.
            let logged = try await pipeline.loggedEvents()
            let backfill = try await pipeline.appstorectl(["backfill", "--app", pipeline.bundleId, "--since", "29d", "--only-failures"])
            #expect(backfill.status == 0, "\(backfill.output)")
            #expect(backfill.output.contains("\(report.dropped + report.undelivered) written"), "\(backfill.output)")
            // The backfilled notifications are new to grant: wait until it logged them too.
            let deadline = ContinuousClock.now + .seconds(180)
            while try await pipeline.loggedEvents() < logged + report.dropped + report.undelivered, ContinuousClock.now < deadline {
                try await Task.sleep(for: .seconds(1))
            }

            var after = try await pipeline.mismatches(run)
            let settle = ContinuousClock.now + .seconds(60)
            while !after.isEmpty, ContinuousClock.now < settle {
                try await Task.sleep(for: .seconds(1))
                after = try await pipeline.mismatches(run)
            }
            print("recovery: \(after.count) customer(s) wrong after reconcile + backfill")
            #expect(after.isEmpty, "\(after.prefix(5).joined(separator: "\n"))")

            let entitled = try await pipeline.entitlements().first { !$0.value.isEmpty }
            let customer = try #require(entitled)
            let shown = try await pipeline.appstorectl(["customer", customer.key, "--environment", "Sandbox"])
            #expect(shown.status == 0, "\(shown.output)")
            for key in customer.value.keys where !key.hasPrefix("units:") { #expect(shown.output.contains(key)) }
            let unknown = try await pipeline.appstorectl(["customer", UUID().uuidString]).status
            #expect(unknown == 1)
        }
    }
}
