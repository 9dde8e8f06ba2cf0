import AppStore
import AppStoreSigning
import Crypto
import Foundation
import JSONCoding
import TestSupport
import Testing

@Suite("Token format, algorithm and signature")
struct TokenFormatTests {
    let authority: SigningAuthority
    let signer: JWSSigner
    let verifier: SignedDataVerifier
    let token: String

    init() throws {
        authority = try TestPKI.authority()
        signer = try authority.makeSigner()
        verifier = try TestPKI.verifier(trusting: [authority.root])
        token = try TestPKI.notification(signer: signer)
    }

    var segments: [String] { token.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }

    @Test("alg must be ES256", arguments: ["none", "HS256", "RS256", "ES384", "es256", "ES256 "])
    func algorithms(alg: String) async throws {
        let other = try JWSSigner(key: authority.leafKey, certificateChain: authority.certificateChain, algorithm: alg)
        await expectRejection(.unsupportedAlgorithm) {
            try await verifier.verifyNotification(signedPayload: TestPKI.notification(signer: other))
        }
    }

    @Test("a header without alg is rejected")
    func missingAlgorithm() async throws {
        let header = try JSONSerialization.data(withJSONObject: ["x5c": []])
        let token = try JWSSigner.sign(headerJSON: header, payloadJSON: Array("{}".utf8), key: authority.leafKey)
        await expectRejection(.unsupportedAlgorithm) { try await verifier.verifyTransaction(token) }
    }

    @Test("a tampered header is rejected")
    func tamperedHeader() async throws {
        // Same chain, an extra header field: the signing input changes.
        let header = try AppStoreJSON.decoder.decode(
            [String: JSONValue].self,
            from: Data(Base64.decodeURL(segments[0]) ?? [])
        )
        var changed = header
        changed["kid"] = .string("attacker")
        let forgedHeader = Base64.encodeURL(try AppStoreJSON.encoder.encode(changed))
        await expectRejection(.invalidSignature) {
            try await verifier.verifyNotification(
                signedPayload: [forgedHeader, segments[1], segments[2]].joined(separator: ".")
            )
        }
    }

    @Test("a tampered payload is rejected")
    func tamperedPayload() async throws {
        var payload = try AppStoreJSON.decoder.decode(
            ResponseBodyV2DecodedPayload.self,
            from: Data(Base64.decodeURL(segments[1]) ?? [])
        )
        payload.notificationType = .refundReversed
        let forged = Base64.encodeURL(try AppStoreJSON.encoder.encode(payload))
        await expectRejection(.invalidSignature) {
            try await verifier.verifyNotification(
                signedPayload: [segments[0], forged, segments[2]].joined(separator: ".")
            )
        }
    }

    @Test("a tampered signature is rejected")
    func tamperedSignature() async throws {
        var signature = Base64.decodeURL(segments[2]) ?? []
        signature[10] ^= 0x01
        await expectRejection(.invalidSignature) {
            try await verifier.verifyNotification(
                signedPayload: [segments[0], segments[1], Base64.encodeURL(signature)].joined(separator: ".")
            )
        }
        // DER instead of raw r‖s, and a truncated signature.
        let der = try authority.leafKey.signature(for: Data((segments[0] + "." + segments[1]).utf8)).derRepresentation
        for bad in [Base64.encodeURL(der), Base64.encodeURL(signature.prefix(63))] {
            await expectRejection(.invalidSignature) {
                try await verifier.verifyNotification(
                    signedPayload: [segments[0], segments[1], bad].joined(separator: ".")
                )
            }
        }
    }

    @Test("a signature made by another key is rejected")
    func otherKey() async throws {
        let forger = try JWSSigner(key: P256.Signing.PrivateKey(), certificateChain: authority.certificateChain)
        await expectRejection(.invalidSignature) {
            try await verifier.verifyNotification(
                signedPayload: TestPKI.notification(signer: forger, nestedSigner: signer)
            )
        }
    }

    @Test(
        "anything but three canonical base64url segments is malformed",
        arguments: [
            "", ".", "..", "a.b", "a.b.c.d", "....", "e30..e30", ".e30.e30",
            "e30.e30.", "a b.c.d", "e30=.e30.e30", "e30.e30.e30=", "e3+.e30.e30", "e30.e30.e3/",
            "e31.e30.e30",  // non-canonical: unused bits set
        ]
    )
    func malformedStructure(token: String) async throws {
        await expectRejection(.malformed) { try await verifier.verifyNotification(signedPayload: token) }
    }

    @Test("invalid base64url in each segment is malformed")
    func invalidBase64URL() async throws {
        for index in 0..<3 {
            var parts = segments
            parts[index] = String(parts[index].dropLast()) + "*"
            await expectRejection(.malformed) {
                try await verifier.verifyNotification(signedPayload: parts.joined(separator: "."))
            }
            parts = segments
            parts[index] += "A"  // a length of 4n+1 cannot be base64
            if parts[index].count % 4 == 1 {
                await expectRejection(.malformed) {
                    try await verifier.verifyNotification(signedPayload: parts.joined(separator: "."))
                }
            }
        }
    }

    @Test("a header that is not JSON is malformed")
    func headerNotJSON() async throws {
        let token = try JWSSigner.sign(
            headerJSON: Array("not json".utf8),
            payloadJSON: Array("{}".utf8),
            key: authority.leafKey
        )
        await expectRejection(.malformed) { try await verifier.verifyTransaction(token) }
        let array = try JWSSigner.sign(
            headerJSON: Array("[1,2]".utf8),
            payloadJSON: Array("{}".utf8),
            key: authority.leafKey
        )
        await expectRejection(.malformed) { try await verifier.verifyTransaction(array) }
    }

    @Test("a correctly signed payload that is not JSON, or not an object, is malformed")
    func payloadNotJSON() async throws {
        for payload in [
            "not json", "[1,2,3]", "\"text\"", "{\"signedDate\":\"yesterday\"}", "{\"notificationType\":7}",
        ] {
            let token = try signer.sign(payloadJSON: Array(payload.utf8))
            await expectRejection(.malformed) { try await verifier.verifyNotification(signedPayload: token) }
        }
    }

    @Test("inputs over the size limit are rejected before parsing")
    func oversizedInput() async throws {
        let huge = String(repeating: "A", count: 5 * 1024 * 1024)
        await expectRejection(.malformed) {
            try await verifier.verifyNotification(signedPayload: huge + "." + huge + "." + huge)
        }
        // A correctly signed 5 MB payload is rejected too.
        let big = try signer.sign(["padding": String(repeating: "x", count: 5 * 1024 * 1024)])
        await expectRejection(.malformed) { try await verifier.verifyTransaction(big) }
        await expectRejection(.malformed) { try SignedDataVerifier.detectKind(of: big) }
    }

    @Test("deeply nested or huge JSON is rejected without crashing")
    func hostileJSON() async throws {
        let nested = String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)
        let token = try signer.sign(payloadJSON: Array(nested.utf8))
        await expectRejection(.malformed) { try SignedDataVerifier.detectKind(of: token) }
        await expectRejection(.malformed) { try InspectedJWS(token) }
        let objects =
            "{\"a\":" + String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_001)
        let objectToken = try signer.sign(payloadJSON: Array(objects.utf8))
        await expectRejection(.malformed) { try await verifier.verifyNotification(signedPayload: objectToken) }
        await expectRejection(.malformed) { try await verifier.verify(objectToken) }
    }
}
