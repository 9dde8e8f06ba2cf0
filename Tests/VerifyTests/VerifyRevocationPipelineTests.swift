import AppStore
import AppStoreSimulator
import Foundation
import KafkaClient
import NIOHTTP1
import PipelineRecords
import StageRuntime
import Synchronization
import TestSupport
import Testing
import VerifyService

/// An OCSP responder outage on the real broker, through the stage runtime: records wait, none is
/// dead-lettered, and every one is verified once the simulated Apple's responder answers again.
@Suite("verify stage: OCSP outage on the real broker", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct VerifyRevocationPipelineTests {
    /// The verify stage, remembering how each failed attempt was classified.
    final class RecordingStage: PipelineStage {
        let inner: VerifyStage
        let failures = Mutex<[(code: String, transient: Bool)]>([])
        var name: String { inner.name }

        init(_ inner: VerifyStage) { self.inner = inner }

        func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
            do {
                return try await inner.process(message)
            } catch {
                let classified = FailureClassification(error)
                failures.withLock { $0.append((classified.code, classified.isTransient)) }
                throw error
            }
        }
    }

    /// Polls `condition` until it holds or `timeout` passes; returns whether it held.
    static func eventually(timeout: Duration = .seconds(120), _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    @Test("an unreachable responder delays records without losing any: retried in place, then all verified, none dead-lettered")
    func outage() async throws {
        try await RunningSimulator.withOCSP { sim in
            let topics = try await PipelineTopics.make("verify-ocsp")
            try await VerifyRevocationTests.admin(sim, .PUT, "/sim/ocsp/fault", body: #"{"mode":"unavailable"}"#)
            let ids = (0..<4).map { "20000000000005\($0)" }
            try await produceRaw(topics.raw, try ids.map { (try VerifyRevocationTests.body(sim, originalTransactionId: $0), "apple-webhook") })

            let stage = RecordingStage(try VerifyRevocationTests.stage(trusting: sim, outputTopic: topics.verified))
            let harness = try StageHarness(
                stage: stage, input: topics.raw, deadLetters: topics.deadLetters, groupID: TestServices.uniqueGroup("verify-ocsp"))
            // The stage keeps asking: several refused requests and several transient failures.
            let retried = try await Self.eventually {
                let faulted = try await VerifyRevocationTests.admin(sim, .GET, "/sim/ocsp").faulted
                return faulted >= 3 && stage.failures.withLock { $0.count } >= 3
            }
            #expect(retried, "the stage did not retry against the refusing responder")
            try await VerifyRevocationTests.admin(sim, .DELETE, "/sim/ocsp/fault")

            let verified = try await TopicReader.read(topics.verified) { $0.count >= ids.count }
            try await harness.stop()
            #expect(verified.count == ids.count)
            #expect(Set(verified.compactMap(\.keyString)) == Set(ids.map { "Sandbox:\($0)" }))
            // Only a permanent failure is dead-lettered; every failure here was the transient one.
            let failures = stage.failures.withLock { $0 }
            #expect(!failures.isEmpty)
            for failure in failures {
                #expect(failure.code == "verification.revocation_check_unavailable" && failure.transient, "\(failure)")
            }
            #expect(try await VerifyRevocationTests.admin(sim, .GET, "/sim/ocsp").answered >= 2)
        }
    }
}
