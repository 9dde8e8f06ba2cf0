import AppStore
import AppStoreSigning
import Foundation
import TestSupport
import Testing
import X509

/// An in-process OCSP transport that counts requests and can fail or answer garbage.
struct RecordingTransport: OCSPTransport {
    enum Mode: Sendable {
        case answer(OCSPResponder)
        case unreachable
        case garbage
    }

    struct Unreachable: Error {}

    let mode: Mode
    let requests = Counter()

    func send(request: [UInt8], to url: String) async throws -> [UInt8] {
        requests.increment()
        switch mode {
        case .answer(let responder): return try await responder.send(request: request, to: url)
        case .unreachable: throw Unreachable()
        case .garbage: return [0x30, 0x03, 0x0A, 0x01, 0x00]
        }
    }
}

@Suite("Online revocation checks (OCSP) against an in-process responder")
struct RevocationTests {
    let authority: SigningAuthority
    let clock = TestClock()

    init() throws {
        authority = try SigningAuthority(options: SigningAuthorityOptions(ocspBaseURL: "http://ocsp.invalid"))
    }

    func verifier(_ transport: RecordingTransport, lifetime: Double = 900) throws -> SignedDataVerifier {
        let clock = self.clock
        return try TestPKI.verifier(
            trusting: [authority.root],
            revocationChecking: RevocationChecking(transport: transport, cacheLifetime: lifetime),
            clock: { clock.now }
        )
    }

    func responder(revoking serials: Set<Certificate.SerialNumber> = []) -> OCSPResponder {
        let clock = self.clock
        return OCSPResponder(authority: authority, revokedSerialNumbers: serials, clock: { clock.now })
    }

    @Test("good answers for leaf and intermediate verify, and the result is cached for its lifetime")
    func goodAndCached() async throws {
        let transport = RecordingTransport(mode: .answer(responder()))
        let verifier = try verifier(transport)
        let token = try TestPKI.notification(signer: authority.makeSigner(), signedDate: clock.now)

        _ = try await verifier.verifyNotification(signedPayload: token)
        #expect(transport.requests.count == 2, "one request for the leaf, one for the intermediate")
        _ = try await verifier.verifyNotification(signedPayload: token)
        #expect(transport.requests.count == 2, "served from the cache")

        clock.advance(by: 901)
        _ = try await verifier.verifyNotification(signedPayload: token)
        #expect(transport.requests.count == 4, "checked again after the cache lifetime")
    }

    @Test("a revoked leaf is rejected")
    func revokedLeaf() async throws {
        let transport = RecordingTransport(mode: .answer(responder(revoking: [authority.leaf.serialNumber])))
        let verifier = try verifier(transport)
        await expectRejection(.revoked) {
            try await verifier.verifyTransaction(
                authority.makeSigner().sign(TestPKI.transaction(signedDate: clock.now))
            )
        }
    }

    @Test("a revoked intermediate is rejected")
    func revokedIntermediate() async throws {
        let transport = RecordingTransport(mode: .answer(responder(revoking: [authority.intermediate.serialNumber])))
        let verifier = try verifier(transport)
        await expectRejection(.revoked) {
            try await verifier.verifyTransaction(
                authority.makeSigner().sign(TestPKI.transaction(signedDate: clock.now))
            )
        }
    }

    @Test("an unreachable responder is a retryable failure and nothing is cached")
    func unreachable() async throws {
        let transport = RecordingTransport(mode: .unreachable)
        let verifier = try verifier(transport)
        let token = try authority.makeSigner().sign(TestPKI.transaction(signedDate: clock.now))
        do {
            _ = try await verifier.verifyTransaction(token)
            Issue.record("accepted without a revocation answer")
        } catch {
            #expect(error.code == .revocationCheckUnavailable)
            #expect(error.isRetryable)
        }
        #expect(verifier.cacheStatistics.entries == 0)
    }

    @Test("an unusable answer fails closed")
    func unusableAnswers() async throws {
        let garbage = RecordingTransport(mode: .garbage)
        await expectRejection(.revocationCheckFailed) {
            try await verifier(garbage).verifyTransaction(
                authority.makeSigner().sign(TestPKI.transaction(signedDate: clock.now))
            )
        }
        // A responder of another authority cannot vouch for this one.
        let stranger = try SigningAuthority()
        let foreign = RecordingTransport(mode: .answer(OCSPResponder(authority: stranger)))
        await expectRejection(.revocationCheckFailed) {
            try await verifier(foreign).verifyTransaction(
                authority.makeSigner().sign(TestPKI.transaction(signedDate: clock.now))
            )
        }
    }

    @Test("online checks validate certificates at the current time, not at signedDate")
    func onlineUsesNow() async throws {
        let now = clock.now
        let leaf = try authority.issueLeaf(
            validity: now.addingTimeInterval(-10 * 86_400)...now.addingTimeInterval(-86_400),
            ocspURL: "http://ocsp.invalid/intermediate"
        )
        let token = try leaf.sign(TestPKI.transaction(signedDate: now.addingTimeInterval(-2 * 86_400)))
        let transport = RecordingTransport(mode: .answer(responder()))
        await expectRejection(.certificateExpired) { try await verifier(transport).verifyTransaction(token) }
        // Offline, the same token verifies at its signedDate.
        _ = try await TestPKI.verifier(trusting: [authority.root]).verifyTransaction(token)
    }
}
