import Crypto
import Foundation
import OfferSigning
import TestSupport
import Testing

/// What the cross-check imports from the checkout's Python environment.
let crossCheckModules = ["appstoreserverlibrary", "jwt"]

/// What we sign, checked by Apple's Python library's own stack: PyJWT (which its creators sign
/// with) decodes our JWS with the public key, the audience and ES256 required, and `cryptography`
/// (which its v1 creator signs with) verifies our v1 signature over the message its creator
/// builds. `deploy/local/setup` installs `app-store-server-library` in the checkout's Python
/// environment; outside CI the suite runs when it is there, in CI it must be.
@Suite(
    "Offer signatures checked by Apple's Python library",
    .enabled(Comment(rawValue: CheckoutPython.skipReason(crossCheckModules))) {
        await CheckoutPython.has(crossCheckModules) || TestServices.isCI
    })
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
        _ = try await CheckoutPython.require(crossCheckModules)
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
        let result = try await CheckoutPython.run(["-c", Self.script, json])
        #expect(result.status == 0 && result.output.hasSuffix("ok\n"), "\(result.output)")
    }
}
