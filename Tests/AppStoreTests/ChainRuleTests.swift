import AppStore
import AppStoreSigning
import Crypto
import Foundation
import JSONCoding
import TestSupport
import Testing
import X509

@Suite("Certificate chain rules")
struct ChainRuleTests {
    @Test("a chain to a root that is not configured is rejected, even though x5c[2] is that root")
    func rootNotTrusted() async throws {
        let trusted = try TestPKI.authority()
        let stranger = try TestPKI.authority(SigningAuthorityOptions(name: "Stranger"))
        let verifier = try TestPKI.verifier(trusting: [trusted.root])
        let token = try TestPKI.notification(signer: stranger.makeSigner())
        await expectRejection(.untrustedRoot) { try await verifier.verifyNotification(signedPayload: token) }
    }

    @Test("a chain of another root that claims the trusted root's name is rejected")
    func impostorRoot() async throws {
        let trusted = try TestPKI.authority()
        let impostor = try TestPKI.authority()  // same names, other keys
        #expect(impostor.root.subject == trusted.root.subject)
        let verifier = try TestPKI.verifier(trusting: [trusted.root])
        await expectRejection(.untrustedRoot) {
            try await verifier.verifyTransaction(impostor.makeSigner().sign(TestPKI.transaction()))
        }
    }

    @Test("x5c must hold exactly three certificates", arguments: [0, 1, 2, 4])
    func chainLength(count: Int) async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let chains: [Int: [Certificate]] = [
            0: [],
            1: [authority.leaf],
            2: [authority.leaf, authority.intermediate],
            4: [authority.leaf, authority.intermediate, authority.root, authority.root],
        ]
        let signer = try JWSSigner(key: authority.leafKey, certificateChain: chains[count] ?? [])
        await expectRejection(.invalidChainLength) {
            try await verifier.verifyTransaction(signer.sign(TestPKI.transaction()))
        }
    }

    @Test("a header without x5c is rejected")
    func missingX5C() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let token = try JWSSigner.sign(
            headerJSON: Array(#"{"alg":"ES256"}"#.utf8),
            payloadJSON: AppStoreJSON.encoder.encode(TestPKI.transaction()),
            key: authority.leafKey
        )
        await expectRejection(.invalidChainLength) { try await verifier.verifyTransaction(token) }
    }

    @Test("the intermediate must carry the WWDR marker extension")
    func intermediateWithoutMarker() async throws {
        let authority = try TestPKI.authority(SigningAuthorityOptions(intermediateHasMarker: false))
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        await expectRejection(.missingMarkerExtension) {
            try await verifier.verifyNotification(signedPayload: TestPKI.notification(signer: authority.makeSigner()))
        }
    }

    @Test("the leaf must carry the receipt-signing marker extension")
    func leafWithoutMarker() async throws {
        let authority = try TestPKI.authority(SigningAuthorityOptions(leafHasMarker: false))
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        await expectRejection(.missingMarkerExtension) {
            try await verifier.verifyNotification(signedPayload: TestPKI.notification(signer: authority.makeSigner()))
        }
        let good = try TestPKI.authority()
        let badLeaf = try good.issueLeaf(hasMarker: false)
        let goodVerifier = try TestPKI.verifier(trusting: [good.root])
        await expectRejection(.missingMarkerExtension) {
            try await goodVerifier.verifyTransaction(badLeaf.sign(TestPKI.transaction()))
        }
    }

    @Test("the leaf must be valid at the payload's signedDate")
    func leafValidityAtSignedDate() async throws {
        let now = Date()
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let expiredLeaf = try authority.issueLeaf(
            validity: now.addingTimeInterval(-10 * 86_400)...now.addingTimeInterval(-86_400)
        )
        let futureLeaf = try authority.issueLeaf(
            validity: now.addingTimeInterval(86_400)...now.addingTimeInterval(10 * 86_400)
        )

        await expectRejection(.certificateExpired) {
            try await verifier.verifyTransaction(expiredLeaf.sign(TestPKI.transaction(signedDate: now)))
        }
        await expectRejection(.certificateNotYetValid) {
            try await verifier.verifyTransaction(futureLeaf.sign(TestPKI.transaction(signedDate: now)))
        }
        // Offline, validity is judged at signedDate: data signed while the leaf was valid still verifies.
        let signedWhileValid = try expiredLeaf.sign(
            TestPKI.transaction(signedDate: now.addingTimeInterval(-2 * 86_400))
        )
        _ = try await verifier.verifyTransaction(signedWhileValid)
    }

    @Test("validation at the current time or at a fixed date overrides signedDate")
    func explicitValidationTimes() async throws {
        let now = Date()
        let authority = try TestPKI.authority()
        let expiredLeaf = try authority.issueLeaf(
            validity: now.addingTimeInterval(-10 * 86_400)...now.addingTimeInterval(-86_400)
        )
        let token = try expiredLeaf.sign(TestPKI.transaction(signedDate: now.addingTimeInterval(-2 * 86_400)))

        let atNow = try TestPKI.verifier(trusting: [authority.root], validationTime: .currentTime)
        await expectRejection(.certificateExpired) { try await atNow.verifyTransaction(token) }

        let atFixed = try TestPKI.verifier(
            trusting: [authority.root],
            validationTime: .fixed(now.addingTimeInterval(-5 * 86_400))
        )
        _ = try await atFixed.verifyTransaction(token)
    }

    @Test("an expired intermediate or root is rejected")
    func expiredIssuers() async throws {
        let now = Date()
        var options = SigningAuthorityOptions()
        options.intermediateValidity = now.addingTimeInterval(-10 * 86_400)...now.addingTimeInterval(-86_400)
        let oldIntermediate = try TestPKI.authority(options)
        await expectRejection(.certificateExpired) {
            try await TestPKI.verifier(trusting: [oldIntermediate.root])
                .verifyTransaction(oldIntermediate.makeSigner().sign(TestPKI.transaction()))
        }
        options = SigningAuthorityOptions()
        options.rootValidity = now.addingTimeInterval(-10 * 86_400)...now.addingTimeInterval(-86_400)
        let oldRoot = try TestPKI.authority(options)
        await expectRejection(.certificateExpired) {
            try await TestPKI.verifier(trusting: [oldRoot.root]).verifyTransaction(
                oldRoot.makeSigner().sign(TestPKI.transaction())
            )
        }
    }

    @Test("a cached chain is still checked against each JWS's validation time")
    func cachedChainRespectsValidity() async throws {
        let now = Date()
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let leaf = try authority.issueLeaf(
            validity: now.addingTimeInterval(-10 * 86_400)...now.addingTimeInterval(-86_400)
        )
        _ = try await verifier.verifyTransaction(
            leaf.sign(TestPKI.transaction(signedDate: now.addingTimeInterval(-2 * 86_400)))
        )
        await expectRejection(.certificateExpired) {
            try await verifier.verifyTransaction(leaf.sign(TestPKI.transaction(signedDate: now)))
        }
    }

    @Test("a nested transaction signed by an untrusted chain fails the whole notification")
    func nestedUntrustedChain() async throws {
        let authority = try TestPKI.authority()
        let stranger = try TestPKI.authority(SigningAuthorityOptions(name: "Stranger"))
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let token = try TestPKI.notification(signer: authority.makeSigner(), nestedSigner: stranger.makeSigner())
        do {
            _ = try await verifier.verifyNotification(signedPayload: token)
            Issue.record("accepted a notification with an untrusted nested transaction")
        } catch {
            #expect(error.code == .untrustedRoot)
            #expect(error.message.hasPrefix("data.signedTransactionInfo:"))
        }
    }

    @Test("a nested renewal info with a forged signature fails the whole notification")
    func nestedForgedRenewal() async throws {
        let authority = try TestPKI.authority()
        let signer = try authority.makeSigner()
        let forger = try JWSSigner(key: P256.Signing.PrivateKey(), certificateChain: authority.certificateChain)
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        var payload = try AppStoreJSON.decoder.decode(
            ResponseBodyV2DecodedPayload.self,
            from: Data(Base64.decodeURL(TestPKI.notification(signer: signer).split(separator: ".")[1]) ?? [])
        )
        payload.data?.signedRenewalInfo = try forger.sign(TestPKI.renewalInfo())
        await expectRejection(.invalidSignature) {
            try await verifier.verifyNotification(signedPayload: signer.sign(payload))
        }
    }

    @Test("Production data signed by a configured test root is rejected")
    func productionNeedsAppleRoot() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(
            trusting: [authority.root],
            apps: [TestPKI.app(environments: [.production])]
        )
        await expectRejection(.untrustedRoot) {
            try await verifier.verifyNotification(
                signedPayload: TestPKI.notification(signer: authority.makeSigner(), environment: .production)
            )
        }
        await expectRejection(.untrustedRoot) {
            try await verifier.verifyTransaction(
                authority.makeSigner().sign(TestPKI.transaction(environment: .production))
            )
        }
    }

    @Test("a leaf whose key is not P-256 is rejected")
    func leafKeyNotP256() async throws {
        let authority = try TestPKI.authority()
        // The intermediate (P-384) as "leaf": wrong key type for ES256.
        let signer = try JWSSigner(
            key: authority.leafKey,
            certificateChain: [authority.intermediate, authority.intermediate, authority.root]
        )
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        await expectRejection(.invalidCertificate) {
            try await verifier.verifyTransaction(signer.sign(TestPKI.transaction()))
        }
    }

    @Test("x5c entries that are not base64 DER certificates are rejected")
    func badCertificates() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let payload = try AppStoreJSON.encoder.encode(TestPKI.transaction())
        for entries in [["not base64!", "QUJD", "QUJD"], ["YWJjMTIz", "YWJjMTIz", "YWJjMTIz"]] {
            let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": entries])
            let token = try JWSSigner.sign(headerJSON: header, payloadJSON: payload, key: authority.leafKey)
            await expectRejection(.invalidCertificate) { try await verifier.verifyTransaction(token) }
        }
    }

    @Test("the chain validator can be used on its own")
    func standaloneValidator() async throws {
        let authority = try TestPKI.authority()
        let validator = AppStoreChainValidator(trustedRoots: [authority.root])
        let chain = try await validator.validate(leaf: authority.leaf, intermediate: authority.intermediate, at: Date())
        #expect(chain.root == authority.root)
        #expect(!chain.isAnchoredInAppleRoot)
        await expectRejection(.untrustedRoot) {
            try await AppStoreChainValidator(trustedRoots: []).validate(
                leaf: authority.leaf,
                intermediate: authority.intermediate,
                at: Date()
            )
        }
    }
}
