import Crypto
import Foundation
import OfferSigning
import TestSupport
import Testing

/// What we sign, checked by Apple's Python library's own stack: PyJWT (which its creators sign
/// with) decodes our JWS with the public key, the audience and ES256 required, and `cryptography`
/// (which its v1 creator signs with) verifies our v1 signature over the message its creator
/// builds. `deploy/local/setup` installs `app-store-server-library` in the checkout's Python
/// environment; outside CI the suite runs when it is there, in CI it must be.
@Suite("Offer signatures checked by Apple's Python library", .enabled(if: CheckoutPython.url != nil || TestServices.isCI))
struct PythonCrossCheckTests {
    /// Apple's creator builds the v1 message (its signature is random, so the message is taken from a
    /// signer whose key is swapped for one that records); then the public key checks ours over it.
    static let script = """
        import sys, json, base64, uuid, jwt
        from cryptography.hazmat.primitives import serialization, hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator
        from appstoreserverlibrary.jws_signature_creator import PromotionalOfferV2SignatureCreator
        case = json.loads(sys.argv[1])
        public = serialization.load_pem_public_key(case["publicKey"].encode())
        class Recorder:
            def sign(self, data, algorithm):
                self.data = data
                return b""
        creator = PromotionalOfferSignatureCreator.__new__(PromotionalOfferSignatureCreator)
        creator._signing_key, creator._key_id, creator._bundle_id = Recorder(), case["keyID"], case["bundleId"]
        creator.create_signature(case["productId"], case["offerId"], case["token"], uuid.UUID(case["nonce"]), case["timestamp"])
        public.verify(base64.b64decode(case["v1"]), creator._signing_key.data, ec.ECDSA(hashes.SHA256()))
        for token, audience in ((case["promotional"], "promotional-offer"), (case["introductory"], "introductory-offer-eligibility")):
            claims = jwt.decode(token, public, algorithms=["ES256"], audience=audience, issuer="issuerId", options={"require": ["iat", "nonce", "bid"]})
            header = jwt.get_unverified_header(token)
            assert header == {"alg": "ES256", "kid": case["keyID"], "typ": "JWT"}, header
            assert claims["bid"] == case["bundleId"] and "exp" not in claims, claims
        print("ok")
        """

    @Test("PyJWT verifies our promotional and eligibility JWS; our v1 signature verifies over the message Apple's creator builds")
    func pythonAccepts() async throws {
        let python = try #require(CheckoutPython.url)
        let privateKey = P256.Signing.PrivateKey()
        let key = try OfferSigningKey(keyID: "KEY123", privateKey: privateKey)
        let token = UUID()
        let nonce = UUID()
        let v1 = try PromotionalOfferSigner(bundleId: "com.example.app", key: key).sign(
            productIdentifier: "premium.monthly", offerIdentifier: "promo", appAccountToken: token.uuidString, nonce: nonce,
            timestamp: 1_700_000_000_000)
        let jws = try OfferJWSSigner(bundleId: "com.example.app", issuerID: "issuerId", key: key)
        let input: [String: Any] = [
            "publicKey": privateKey.publicKey.pemRepresentation, "keyID": "KEY123", "bundleId": "com.example.app",
            "productId": "premium.monthly", "offerId": "promo", "token": token.uuidString, "nonce": nonce.uuidString,
            "timestamp": 1_700_000_000_000, "v1": v1.signature,
            "promotional": try jws.promotionalOffer(productId: "premium.monthly", offerIdentifier: "promo", transactionId: "2000000000000001"),
            "introductory": try jws.introductoryOfferEligibility(
                productId: "premium.monthly", allowIntroductoryOffer: false, transactionId: "2000000000000001"),
        ]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: input), as: UTF8.self)
        let result = try await CheckoutPython.runOffPool(python, ["-c", Self.script, json])
        #expect(result.status == 0 && result.output.hasSuffix("ok\n"), "\(result.output)")
    }
}

/// The checkout's Python environment (`.local/python`), when Apple's library is installed in it.
enum CheckoutPython {
    static let url: URL? = {
        let url = TestServices.repositoryRoot.appendingPathComponent(".local/python/bin/python")
        guard FileManager.default.isExecutableFile(atPath: url.path) else { return nil }
        return (try? run(url, ["-c", "import appstoreserverlibrary, jwt"]).status) == 0 ? url : nil
    }()

    /// ``run(_:_:)`` on a thread of its own: waiting for Python on the cooperative pool would stall
    /// every suite running beside this one for as long as Python takes.
    static func runOffPool(_ python: URL, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try run(python, arguments) }) }.start()
        }
    }

    static func run(_ python: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = python
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
