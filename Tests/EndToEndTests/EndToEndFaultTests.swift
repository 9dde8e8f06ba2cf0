import AppStoreSimulator
import Foundation
import GrantTestSupport
import NIOHTTP1
import SimulatedCustomers
import SimulatedDelivery
import SimulatorLifecycleRoutes
import TestSupport
import Testing

/// The end-to-end run again, with faults while it runs: every process SIGKILLed once and restarted,
/// Postgres restarted, Apple's API answering 5xx for 20 s. Stops and starts shared services, so it
/// runs with the resilience tests, alone (`RUN_RESILIENCE_TESTS=1`, see deploy/local/test).
@Suite(
    "End to end with faults: crashes, a Postgres restart, Apple failing",
    .enabled(if: ProcessInfo.processInfo.environment["RUN_RESILIENCE_TESTS"] == "1"), .serialized, .timeLimit(.minutes(20)))
struct EndToEndFaultTests {
    @Test("each stage killed once, Postgres restarted, the API down for 20 s: still the ground truth, lost = 0")
    func faults() async throws {
        try await PipelineUnderTest.with { pipeline in
            var request = LifecycleRunRequest(customers: EndToEndTests.customers, webhook: "")
            request.seed = 4242
            request.duplicateRate = 0.1
            request.maxDelayMs = 300
            request.reorderWindow = 16
            request.stepsPerSecond = 25  // spread the run over about a minute so the faults land mid-run
            let started = ContinuousClock.now
            try await pipeline.play(request)

            var faults: [String] = []
            func at(_ seconds: Int) async throws {
                let due = started + .seconds(seconds)
                if due > .now { try await Task.sleep(until: due) }
            }
            for (second, stage) in [(5, PipelineUnderTest.Stage.verify), (10, .enrich), (15, .grant), (20, .ingest)] {
                try await at(second)
                try await pipeline.crashAndRestart(stage)
                faults.append("\(stage) SIGKILLed at \(second) s")
            }
            try await at(25)
            try await LocalHTTP.runScript("deploy/local/down", ["postgres"])
            try await Task.sleep(for: .seconds(5))
            try await LocalHTTP.runScript("deploy/local/up", ["postgres"])
            faults.append("Postgres down 25–30 s")
            try await at(35)
            let until = Date().addingTimeInterval(20)
            try await pipeline.post("/sim/faults", json: FaultPlan(errorShare: 1, errorStatus: 500, errorCode: 5_000_000, until: until), method: .PUT)
            faults.append("Apple's API 500 for 20 s from 35 s")

            let run = try await pipeline.waitUntilDrained(timeout: .seconds(900))
            let report = try #require(run.report)
            let swept = try await pipeline.sweepRefunds(timeout: .seconds(300))
            #expect(pipeline.sweepProblems(swept, run) == [])
            let logged = try await pipeline.loggedEvents()
            let mismatches = try await pipeline.mismatches(run)
            let lost = try await pipeline.unrecorded(report).count
            print(
                "end to end with faults (\(faults.joined(separator: "; "))): \(run.customers.count) customers, "
                    + "\(report.notifications) notifications (+\(report.duplicates) duplicates, \(report.retries) redelivered by the simulator, "
                    + "\(report.uploads) uploads) in \(ContinuousClock.now - started); logged \(logged); lost = \(lost); "
                    + "undelivered = \(report.undelivered); mismatches = \(mismatches.count)")
            #expect(lost == 0)
            #expect(report.undelivered == 0)
            #expect(mismatches.isEmpty, "\(mismatches.prefix(5).joined(separator: "\n"))")
        }
    }
}
