import AppStoreSimulator
import Foundation
import GrantTestSupport
import LifecyclePlayback
import NIOHTTP1
import SimulatorLifecycle
import StageRuntime
import TestSupport
import Testing

/// The operator tool's recovery subcommands run as the `appstorectl` process against the whole
/// pipeline and the simulated Apple (APPSTORE_BIN_DIR must hold the built products).
@Suite(
    "appstorectl recovery against the whole pipeline",
    .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized, .timeLimit(.minutes(15)))
struct RecoveryToolTests {
    static var customers: Int { Int(ProcessInfo.processInfo.environment["RECOVERY_CUSTOMERS"] ?? "") ?? 60 }

    @Test("test-notification: the simulator POSTs the TEST notification to ingest and it arrives on the verified topic")
    func testNotificationArrives() async throws {
        try await PipelineUnderTest.with { pipeline in
            let (refused, _) = try await Self.appstorectl(["test-notification", "--app", pipeline.bundleID, "--timeout", "3"], pipeline)
            #expect(refused == 1, "without a webhook the simulator delivers nothing, so nothing arrives")
            let code = try await pipeline.post(
                "/sim/webhook", json: WebhookSetting(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v2/notifications"), method: .PUT)
            #expect(code == 200)
            let (status, output) = try await Self.appstorectl(["test-notification", "--app", pipeline.bundleID, "--timeout", "60"], pipeline)
            #expect(status == 0, "\(output)")
            #expect(output.contains("arrived:"))
            #expect(output.contains("Apple's send attempts: SUCCESS"), "the simulator records its delivery as a send attempt")
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
            let reconcileArguments = ["reconcile", "--app", pipeline.bundleID, "--leeway-seconds", "\(pipeline.leeway)"]
            let (reconcile, reconcileOutput) = try await Self.appstorectl(reconcileArguments, pipeline)
            #expect(reconcile == 0, "\(reconcileOutput)")
            var repaired = false
            let repairDeadline = ContinuousClock.now + .seconds(90)
            while !repaired, ContinuousClock.now < repairDeadline {
                try await Task.sleep(for: .seconds(1))
                let (_, dryRun) = try await Self.appstorectl(reconcileArguments + ["--dry-run"], pipeline)
                repaired = dryRun.contains("\n0 overdue subscription(s)")
            }
            #expect(repaired, "reconciled subscriptions are still overdue after enrich and grant had 90 s")

            // Sandbox keeps 30 days of notification history; the simulated lifecycles fit well inside.
            let logged = try await pipeline.loggedEvents()
            let (backfill, backfillOutput) = try await Self.appstorectl(
                ["backfill", "--app", pipeline.bundleID, "--since", "29d", "--only-failures"], pipeline)
            #expect(backfill == 0, "\(backfillOutput)")
            #expect(backfillOutput.contains("\(report.dropped + report.undelivered) written"), "\(backfillOutput)")
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
            let (shown, customerOutput) = try await Self.appstorectl(["customer", customer.key, "--environment", "Sandbox"], pipeline)
            #expect(shown == 0, "\(customerOutput)")
            for key in customer.value.keys where !key.hasPrefix("units:") { #expect(customerOutput.contains(key)) }
            let (unknown, _) = try await Self.appstorectl(["customer", UUID().uuidString], pipeline)
            #expect(unknown == 1)
        }
    }

    /// Runs `appstorectl` with the pipeline's settings (enrich's API and broker variables, grant's
    /// database, the run's own topics); returns the exit status and everything it printed.
    static func appstorectl(_ arguments: [String], _ pipeline: PipelineUnderTest) async throws -> (Int32, String) {
        guard let bin = ProcessInfo.processInfo.environment["APPSTORE_BIN_DIR"] else {
            throw TestSupportError("APPSTORE_BIN_DIR is not set (swift build --show-bin-path)")
        }
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in pipeline.environments["enrich"] ?? [:] where name.hasPrefix("APPSTORE_") || name.hasPrefix("KAFKA_") {
            environment[name] = value
        }
        for (name, value) in pipeline.environments["grant"] ?? [:] where name.hasPrefix("POSTGRES_") { environment[name] = value }
        environment["RAW_TOPIC"] = pipeline.topics[Topics.raw]
        environment["VERIFIED_TOPIC"] = pipeline.topics[Topics.verified]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bin).appendingPathComponent("appstorectl")
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let running = RunningProcess(process: process, pipe: pipe)
        let (status, output) = await Task.detached { running.wait() }.value
        print("$ appstorectl \(arguments.joined(separator: " "))\n\(output)")
        return (status, output)
    }
}

/// A started process and its output pipe, waited for off the cooperative pool.
private final class RunningProcess: @unchecked Sendable {
    let process: Process
    let pipe: Pipe
    init(process: Process, pipe: Pipe) {
        self.process = process
        self.pipe = pipe
    }

    func wait() -> (Int32, String) {
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
