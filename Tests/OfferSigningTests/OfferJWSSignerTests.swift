import Crypto
import EnvironmentSettings
import Foundation
import JSONCoding
import OfferSigning
import TestSupport
import Testing

/// The JWS of promotional offers and introductory-offer eligibility: header and claims exactly as
/// Apple's page and its libraries' creators make them, and a signature the key's public half verifies.
@Suite("Offer JWS signatures (v2)")
struct OfferJWSSignerTests {
    /// The decoded header and claims of a compact JWS whose ES256 signature `key` verifies.
    static func open(_ jws: String, key: P256.Signing.PublicKey) throws -> (header: [String: Any], claims: [String: Any]) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64.decodeURL(parts[2])))
        #expect(key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)), "the signature does not verify")
        let header = try JSONSerialization.jsonObject(with: Data(try #require(Base64.decodeURL(parts[0])))) as? [String: Any]
        let claims = try JSONSerialization.jsonObject(with: Data(try #require(Base64.decodeURL(parts[1])))) as? [String: Any]
        return (try #require(header), try #require(claims))
    }

    static func signer() throws -> (OfferJWSSigner, P256.Signing.PrivateKey) {
        let key = P256.Signing.PrivateKey()
        return (try OfferJWSSigner(bundleId: "bundleId", issuerID: "issuerId", key: try OfferSigningKey(keyID: "keyId", privateKey: key)), key)
    }

    static let nonce = UUID(uuidString: "368F3888-DCD8-11EF-B3C8-325096B39F47")!
    static let issuedAt = Date(timeIntervalSince1970: 1_623_085_200.75)

    @Test("promotional offer: header alg/kid/typ, claims iss iat aud bid nonce productId offerIdentifier transactionId and nothing else")
    func promotionalOffer() throws {
        let (signer, key) = try Self.signer()
        let jws = try signer.promotionalOffer(
            productId: "productId", offerIdentifier: "offerIdentifier", transactionId: "transactionId", nonce: Self.nonce,
            issuedAt: Self.issuedAt)
        let (header, claims) = try Self.open(jws, key: key.publicKey)
        #expect(header as? [String: String] == ["alg": "ES256", "kid": "keyId", "typ": "JWT"])
        #expect(Set(claims.keys) == ["iss", "iat", "aud", "bid", "nonce", "productId", "offerIdentifier", "transactionId"])
        #expect(claims["iss"] as? String == "issuerId")
        #expect(claims["aud"] as? String == "promotional-offer")
        #expect(claims["bid"] as? String == "bundleId")
        #expect(claims["nonce"] as? String == "368f3888-dcd8-11ef-b3c8-325096b39f47")
        #expect(claims["iat"] as? Int == 1_623_085_200, "iat is whole UNIX seconds")
        let payload = String(decoding: try #require(Base64.decodeURL(jws.split(separator: ".")[1])), as: UTF8.self)
        #expect(payload.contains(#""iat":1623085200,"#))
        #expect(claims["productId"] as? String == "productId")
        #expect(claims["offerIdentifier"] as? String == "offerIdentifier")
        #expect(claims["transactionId"] as? String == "transactionId")
        #expect(claims["exp"] == nil)
    }

    @Test("promotional offer without a transaction: the claim is left out, not null")
    func promotionalOfferWithoutTransaction() throws {
        let (signer, key) = try Self.signer()
        let jws = try signer.promotionalOffer(productId: "productId", offerIdentifier: "offerIdentifier", transactionId: nil)
        let (_, claims) = try Self.open(jws, key: key.publicKey)
        #expect(Set(claims.keys) == ["iss", "iat", "aud", "bid", "nonce", "productId", "offerIdentifier"])
        #expect(UUID(uuidString: try #require(claims["nonce"] as? String)) != nil)
        // Every signature gets its own nonce.
        let again = try Self.open(try signer.promotionalOffer(productId: "p", offerIdentifier: "o", transactionId: nil), key: key.publicKey)
        #expect(again.claims["nonce"] as? String != claims["nonce"] as? String)
    }

    @Test("introductory offer eligibility: aud introductory-offer-eligibility, allowIntroductoryOffer a JSON boolean, transactionId")
    func introductoryOfferEligibility() throws {
        let (signer, key) = try Self.signer()
        for allow in [true, false] {
            let jws = try signer.introductoryOfferEligibility(
                productId: "productId", allowIntroductoryOffer: allow, transactionId: "transactionId", nonce: Self.nonce,
                issuedAt: Self.issuedAt)
            let (header, claims) = try Self.open(jws, key: key.publicKey)
            #expect(header as? [String: String] == ["alg": "ES256", "kid": "keyId", "typ": "JWT"])
            #expect(Set(claims.keys) == ["iss", "iat", "aud", "bid", "nonce", "productId", "allowIntroductoryOffer", "transactionId"])
            #expect(claims["aud"] as? String == "introductory-offer-eligibility")
            #expect(claims["iss"] as? String == "issuerId")
            #expect(claims["bid"] as? String == "bundleId")
            #expect(claims["productId"] as? String == "productId")
            #expect(claims["transactionId"] as? String == "transactionId")
            // A JSON boolean, not the number 0 or 1.
            #expect(claims["allowIntroductoryOffer"] as? Bool == allow)
            let payload = try #require(Base64.decodeURL(jws.split(separator: ".")[1]))
            #expect(String(decoding: payload, as: UTF8.self).contains(#""allowIntroductoryOffer":\#(allow)"#))
        }
    }

    @Test("empty or ambiguous fields are refused with offer.invalid_field")
    func invalidFields() throws {
        let (signer, _) = try Self.signer()
        #expect(throws: OfferSigningError(.invalidField, "the product ID is empty")) {
            try signer.promotionalOffer(productId: "", offerIdentifier: "o", transactionId: nil)
        }
        #expect(throws: OfferSigningError.self) {
            try signer.introductoryOfferEligibility(productId: "p", allowIntroductoryOffer: true, transactionId: "")
        }
        #expect(throws: OfferSigningError.self) {
            try OfferJWSSigner(bundleId: "b", issuerID: "", key: try OfferSigningKey(keyID: "k", privateKey: .init()))
        }
    }
}

/// Offer signing's settings: off unless the key file is set, then every value checked at start.
@Suite("Offer signing settings")
struct OfferSigningSettingsTests {
    static func keyFile(_ contents: String = P256.Signing.PrivateKey().pemRepresentation) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("offer-\(UUID().uuidString.prefix(8)).p8").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func problem(_ env: [String: String]) -> ConfigurationError? {
        do {
            _ = try OfferSigningSettings.read(EnvironmentReader(env))
            return nil
        } catch {
            return error
        }
    }

    @Test("unset is off; a full set reads the key and the apps")
    func offAndOn() throws {
        #expect(try OfferSigningSettings.read(EnvironmentReader([:])) == nil)
        let path = try Self.keyFile()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let settings = try #require(
            try OfferSigningSettings.read(
                EnvironmentReader([
                    "OFFER_SIGNING_KEY_FILE": path, "OFFER_SIGNING_KEY_ID": "ABC123", "OFFER_SIGNING_ISSUER_ID": "issuer",
                    "OFFER_SIGNING_APPS": "com.example.a, com.example.b",
                ])))
        #expect(settings.bundleIds == ["com.example.a", "com.example.b"])
        #expect(settings.key.keyID == "ABC123")
        #expect(settings.promotionalOfferSigner(for: "com.example.b")?.bundleId == "com.example.b")
        #expect(settings.jwsSigner(for: "com.example.c") == nil)
        #expect(!"\(settings)".contains("PRIVATE"))
    }

    @Test("each missing or wrong value stops the start with one line naming it")
    func problems() throws {
        let path = try Self.keyFile()
        let bad = try Self.keyFile("not a key")
        defer {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: bad)
        }
        let full = ["OFFER_SIGNING_KEY_FILE": path, "OFFER_SIGNING_KEY_ID": "K", "OFFER_SIGNING_ISSUER_ID": "i", "OFFER_SIGNING_APPS": "com.a"]
        func without(_ name: String) -> [String: String] { full.filter { $0.key != name } }
        func with(_ name: String, _ value: String) -> [String: String] { full.merging([name: value]) { $1 } }
        let cases: [([String: String], String, String)] = [
            (["OFFER_SIGNING_KEY_ID": "K"], "OFFER_SIGNING_KEY_FILE", "is not set, but OFFER_SIGNING_KEY_ID is"),
            (without("OFFER_SIGNING_KEY_ID"), "OFFER_SIGNING_KEY_ID", "is required but not set"),
            (without("OFFER_SIGNING_ISSUER_ID"), "OFFER_SIGNING_ISSUER_ID", "is required but not set"),
            (without("OFFER_SIGNING_APPS"), "OFFER_SIGNING_APPS", "is required but not set"),
            (with("OFFER_SIGNING_KEY_FILE", "/nonexistent/key.p8"), "OFFER_SIGNING_KEY_FILE", "cannot be read"),
            (with("OFFER_SIGNING_KEY_FILE", bad), "OFFER_SIGNING_KEY_FILE", "holds no P-256 PKCS#8 PEM"),
            (with("OFFER_SIGNING_APPS", " , "), "OFFER_SIGNING_APPS", "lists no bundle ID"),
            (with("OFFER_SIGNING_APPS", "com.a,com.a"), "OFFER_SIGNING_APPS", "twice"),
        ]
        for (env, variable, words) in cases {
            let error = try #require(Self.problem(env), "\(env.keys.sorted()) was accepted")
            #expect(error.variable == variable)
            #expect(error.problem.contains(words), "\(error)")
            #expect(!error.description.contains("\n"))
        }
    }
}
