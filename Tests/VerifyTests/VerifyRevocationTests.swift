import AppStore
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import KafkaClient
import Logging
import NIOCore
import NIOHTTP1
import PipelineRecords
import StageRuntime
import Synchronization
import TestSupport
import Testing
import VerifyService

/// Verify with `APPSTORE_REVOCATION_CHECK=on` against the simulated Apple's OCSP responder over
/// real HTTP: its CA names the simulator in its certificates, and `/sim/ocsp` revokes and breaks it.
@Suite("verify stage: OCSP against the simulated Apple")
struct VerifyRevocationTests {
    /// A stage trusting `sim`'s root for Sandbox, revocation checks on unless said otherwise. Each
    /// test makes fresh stages: a stage keeps a chain's good answer for 15 minutes.
    static func stage(trusting sim: RunningSimulator, revocation: Bool = true, outputTopic: String = Topics.verified) throws -> VerifyStage {
        try VerifyStage(
            configuration: VerifyConfiguration(
                apps: [try AppStoreApp(bundleId: TestPKI.bundleId, appAppleId: TestPKI.appAppleId, environments: [.sandbox])],
                additionalTrustedRoots: [sim.apple.authority.root], checksRevocation: revocation),
            outputTopic: outputTopic, logger: Logger(label: "tests"))
    }

    /// A webhook body holding a notification signed by `sim`'s CA.
    static func body(_ sim: RunningSimulator, originalTransactionId: String = "2000000000000401") throws -> [UInt8] {
        TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: originalTransactionId, signer: try sim.apple.authority.makeSigner()))
    }

    static func message(_ body: [UInt8]) -> KafkaMessage {
        KafkaMessage(
            topic: Topics.raw, partition: 0, offset: 1, key: Array("k".utf8), value: body,
            headers: [KafkaHeader(key: PipelineHeader.source, string: PipelineHeader.Source.appleWebhook)], timestamp: nil)
    }

    /// Calls one of the simulator's `/sim/ocsp` routes over HTTP and returns the status it answers.
    @discardableResult
    static func admin(_ sim: RunningSimulator, _ method: HTTPMethod, _ path: String, body: String? = nil) async throws -> SimulatedOCSP.Status {
        var request = HTTPClientRequest(url: sim.baseURL + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
        let bytes = try await response.body.collect(upTo: 1 << 20)
        #expect(response.status == .ok, "\(method) \(path): \(String(buffer: bytes))")
        return try JSONDecoder().decode(SimulatedOCSP.Status.self, from: Data(bytes.readableBytesView))
    }

    /// Expects `stage` to reject `body` with `code`, transient or not as said.
    static func expectRejected(
        _ stage: VerifyStage, _ body: [UInt8], code: String, transient: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            _ = try await stage.process(message(body))
            Issue.record("accepted; expected \(code)", sourceLocation: sourceLocation)
        } catch {
            let classified = FailureClassification(error)
            #expect(classified.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(classified.isTransient == transient, "\(error)", sourceLocation: sourceLocation)
        }
    }

    /// Verifies `body` and returns the record's key.
    static func verifiedKey(_ stage: VerifyStage, _ body: [UInt8]) async throws -> String? {
        let out = try await stage.process(message(body))
        return try #require(out.first).key.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("a good chain passes after asking the simulator about the leaf and the intermediate; a revoked leaf is refused (verification.revoked)")
    func revokedLeaf() async throws {
        try await RunningSimulator.withOCSP { sim in
            let body = try Self.body(sim)
            let initial = try await Self.admin(sim, .GET, "/sim/ocsp")
            #expect(initial.ocspBaseURL == "\(sim.baseURL)/ocsp" && initial.revoked.isEmpty && initial.requests == 0)
            #expect(try await Self.verifiedKey(try Self.stage(trusting: sim), body) == "Sandbox:2000000000000401")
            // The leaf and the intermediate, once each: the nested JWS share the chain's answer.
            #expect(try await Self.admin(sim, .GET, "/sim/ocsp").answered == 2)

            let revoked = try await Self.admin(sim, .PUT, "/sim/ocsp/revoked/leaf")
            #expect(revoked.revoked == [.leaf])
            await Self.expectRejected(try Self.stage(trusting: sim), body, code: "verification.revoked")
            // With the checks off nothing asks the responder, and the same bytes pass.
            let asked = try await Self.admin(sim, .GET, "/sim/ocsp").requests
            #expect(try await Self.verifiedKey(try Self.stage(trusting: sim, revocation: false), body) != nil)
            #expect(try await Self.admin(sim, .GET, "/sim/ocsp").requests == asked)
            // Reinstated, it passes the checks again: the refusal came from the responder's answer.
            try await Self.admin(sim, .DELETE, "/sim/ocsp/revoked/leaf")
            #expect(try await Self.verifiedKey(try Self.stage(trusting: sim), body) != nil)
        }
    }

    @Test("a revoked intermediate is refused (verification.revoked), for an upload as for a notification")
    func revokedIntermediate() async throws {
        try await RunningSimulator.withOCSP { sim in
            let notification = try Self.body(sim)
            let upload = TestPKI.uploadBody(
                try TestPKI.signedTransaction(originalTransactionId: "2000000000000402", signer: try sim.apple.authority.makeSigner()))
            #expect(try await Self.admin(sim, .PUT, "/sim/ocsp/revoked/intermediate").revoked == [.intermediate])
            let stage = try Self.stage(trusting: sim)
            await Self.expectRejected(stage, notification, code: "verification.revoked")
            do {
                _ = try await stage.verify(rawBody: upload, source: PipelineHeader.Source.appUpload)
                Issue.record("a transaction under a revoked intermediate was accepted")
            } catch {
                #expect(FailureClassification(error).code == "verification.revoked")
                #expect(!FailureClassification(error).isTransient)
            }
            #expect(try await Self.admin(sim, .GET, "/sim/ocsp").answered >= 1)
        }
    }

    @Test("a malformed OCSP answer is refused (verification.revocation_check_failed, permanent)")
    func malformedAnswer() async throws {
        try await RunningSimulator.withOCSP { sim in
            let status = try await Self.admin(sim, .PUT, "/sim/ocsp/fault", body: #"{"mode":"malformed"}"#)
            #expect(status.fault == .malformed)
            await Self.expectRejected(try Self.stage(trusting: sim), try Self.body(sim), code: "verification.revocation_check_failed")
            #expect(try await Self.admin(sim, .GET, "/sim/ocsp").faulted >= 1)
        }
    }

    @Test(
        "an unreachable responder, or one answering tryLater, is transient (verification.revocation_check_unavailable); once it answers, the same stage verifies the same bytes",
        arguments: [SimulatedOCSP.Fault.unavailable, .tryLater])
    func unreachableResponder(fault: SimulatedOCSP.Fault) async throws {
        try await RunningSimulator.withOCSP { sim in
            let body = try Self.body(sim)
            #expect(try await Self.admin(sim, .PUT, "/sim/ocsp/fault", body: #"{"mode":"\#(fault.rawValue)"}"#).fault == fault)
            let stage = try Self.stage(trusting: sim)
            await Self.expectRejected(stage, body, code: "verification.revocation_check_unavailable", transient: true)
            #expect(try await Self.admin(sim, .GET, "/sim/ocsp").faulted >= 1)
            #expect(try await Self.admin(sim, .DELETE, "/sim/ocsp/fault").fault == SimulatedOCSP.Fault.none)
            #expect(try await Self.verifiedKey(stage, body) == "Sandbox:2000000000000401")
        }
    }

    @Test("the simulator's admin routes refuse what they do not know")
    func adminRefusals() async throws {
        try await RunningSimulator.withOCSP { sim in
            let refused: [(HTTPMethod, String, String?)] = [
                (.PUT, "/sim/ocsp/revoked/root", nil), (.PUT, "/sim/ocsp/fault", #"{"mode":"sometimes"}"#),
            ]
            for (method, path, body) in refused {
                var request = HTTPClientRequest(url: sim.baseURL + path)
                request.method = method
                if let body { request.body = .bytes(ByteBuffer(string: body)) }
                let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
                _ = try await response.body.collect(upTo: 1 << 20)
                #expect(response.status == .badRequest, "\(path)")
            }
            let status = try await Self.admin(sim, .GET, "/sim/ocsp")
            #expect(status.revoked.isEmpty && status.fault == SimulatedOCSP.Fault.none)
        }
    }
}

extension RunningSimulator {
    /// Runs `body` with a simulator whose CA names its own OCSP responder, stopped afterwards.
    static func withOCSP<T: Sendable>(_ body: @Sendable (RunningSimulator) async throws -> T) async throws -> T {
        let sim = try await startWithOCSP()
        return try await withCleanup {
            try await body(sim)
        } cleanup: {
            await sim.stop()
        }
    }
}
