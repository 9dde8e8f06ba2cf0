import Crypto
import Foundation
import JSONCoding
import OfferSigning
import TestSupport
import Testing

/// Promotional offers signed the original way: Apple's message, built here on its own from the
/// documented order, verifies every signature we make with the key's public half.
@Suite("Promotional offer signatures (v1)")
struct PromotionalOfferSignerTests {
    /// Apple's page and its four libraries: the fields joined by U+2063, token and nonce lower-cased.
    static func appleMessage(
        bundle: String, keyID: String, product: String, offer: String, token: String, nonce: String, timestamp: String
    ) -> [UInt8] {
        let separator = "\u{2063}"
        let text =
            bundle + separator + keyID + separator + product + separator + offer + separator + token.lowercased() + separator
            + nonce.lowercased() + separator + timestamp
        return Array(text.utf8)
    }

    static func verifies(_ signature: PromotionalOfferSignature, message: [UInt8], with key: P256.Signing.PublicKey) -> Bool {
        guard let der = Data(base64Encoded: signature.signature),
            let parsed = try? P256.Signing.ECDSASignature(derRepresentation: der)
        else { return false }
        return key.isValidSignature(parsed, for: message)
    }

    @Test("a signature verifies over Apple's message, with the customer's token and nonce lower-cased and the timestamp in milliseconds")
    func verifiesOverApplesMessage() throws {
        let privateKey = P256.Signing.PrivateKey()
        let signer = try PromotionalOfferSigner(bundleId: "com.example.app", key: try OfferSigningKey(keyID: "ABCDE12345", privateKey: privateKey))
        let token = UUID()
        let nonce = UUID()
        let signed = try signer.sign(
            productIdentifier: "premium.monthly", offerIdentifier: "winback_50", appAccountToken: token.uuidString, nonce: nonce,
            now: Date(timeIntervalSince1970: 1_698_148_900.123))
        #expect(signed.keyID == "ABCDE12345")
        #expect(signed.nonce == nonce)
        #expect(signed.timestamp == 1_698_148_900_123)
        let message = Self.appleMessage(
            bundle: "com.example.app", keyID: "ABCDE12345", product: "premium.monthly", offer: "winback_50", token: token.uuidString,
            nonce: nonce.uuidString, timestamp: "1698148900123")
        #expect(Self.verifies(signed, message: message, with: privateKey.publicKey))
        // Another customer's message, or another key, does not verify.
        let other = Self.appleMessage(
            bundle: "com.example.app", keyID: "ABCDE12345", product: "premium.monthly", offer: "winback_50", token: UUID().uuidString,
            nonce: nonce.uuidString, timestamp: "1698148900123")
        #expect(!Self.verifies(signed, message: other, with: privateKey.publicKey))
        #expect(!Self.verifies(signed, message: message, with: P256.Signing.PrivateKey().publicKey))
        // The signature is DER in standard base64, as StoreKit takes it.
        #expect(Data(base64Encoded: signed.signature).map { $0.first == 0x30 } == true)
    }

    @Test("an empty appAccountToken leaves its field empty; each signature has its own nonce and still verifies")
    func emptyTokenAndFreshNonces() throws {
        let privateKey = P256.Signing.PrivateKey()
        let signer = try PromotionalOfferSigner(bundleId: "com.example.app", key: try OfferSigningKey(keyID: "KEY", privateKey: privateKey))
        let first = try signer.sign(productIdentifier: "p", offerIdentifier: "o", appAccountToken: "")
        let second = try signer.sign(productIdentifier: "p", offerIdentifier: "o", appAccountToken: "")
        #expect(first.nonce != second.nonce)
        for signed in [first, second] {
            let message = Self.appleMessage(
                bundle: "com.example.app", keyID: "KEY", product: "p", offer: "o", token: "", nonce: signed.nonce.uuidString,
                timestamp: String(signed.timestamp))
            #expect(Self.verifies(signed, message: message, with: privateKey.publicKey))
        }
    }

    @Test("a field holding Apple's separator or a control character, or an empty product, is refused rather than signed")
    func ambiguousFieldsRefused() throws {
        let signer = try PromotionalOfferSigner(bundleId: "com.example.app", key: try OfferSigningKey(keyID: "KEY", privateKey: .init()))
        for (product, offer, token) in [("a\u{2063}b", "o", ""), ("p", "o\n", ""), ("p", "o", "x\u{2063}"), ("", "o", "")] {
            #expect(throws: OfferSigningError.self) {
                try signer.sign(productIdentifier: product, offerIdentifier: offer, appAccountToken: token)
            }
        }
        #expect(throws: OfferSigningError.self) {
            try PromotionalOfferSigner(bundleId: "", key: try OfferSigningKey(keyID: "KEY", privateKey: .init()))
        }
        #expect(throws: OfferSigningError.self) { try OfferSigningKey(keyID: "", privateKey: .init()) }
        #expect(throws: OfferSigningError.self) {
            try OfferSigningKey(keyID: "KEY", pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
        }
    }
}

/// Apple's own test inputs with Apple's test key (`testSigningKey.p8` of its libraries' test data):
/// the message is exactly the bytes Apple's creators sign, so a signature Apple's Python library
/// made for these inputs verifies over our message, and ours over Apple's.
@Suite(
    "Promotional offer signatures against Apple's test data",
    .enabled(if: SharedFixtures.hasAppleLibraryData || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason)))
struct PromotionalOfferKnownAnswerTests {
    static func appleKey() throws -> OfferSigningKey {
        let url = try SharedFixtures.require("apple-library-testdata/certs/testSigningKey.p8")
        return try OfferSigningKey(keyID: "keyId", file: url.path)
    }

    /// The inputs of Apple's `PromotionalOfferSignatureCreatorTests` (all four libraries).
    static let nonce = UUID(uuidString: "20fba8a0-2b80-4a7d-a17f-85c1854727f8")!
    static let timestamp: Int64 = 1_698_148_900_000

    /// Made once by Apple's Python library (app-store-server-library 3.1.2,
    /// `PromotionalOfferSignatureCreator(testSigningKey.p8, "keyId", "bundleId").create_signature("productId",
    /// "offerId", "applicationUsername", UUID("20fba8a0-…"), 1698148900000)`): DER, base64.
    static let applePythonSignature = "MEQCIFjiU72QC/tGqqEVNZ5/4ZrEDEPQBZHAualZHNDKX5SSAiBXSDbstn7h/hQGmPEoC1V+jnpT+D7Nkwjjjtg0wdaqgQ=="

    @Test("Apple's inputs give Apple's message byte for byte, and our signature of it verifies with the test key")
    func applesInputs() throws {
        let key = try Self.appleKey()
        let signer = try PromotionalOfferSigner(bundleId: "bundleId", key: key)
        let expected =
            "bundleId\u{2063}keyId\u{2063}productId\u{2063}offerId\u{2063}applicationusername\u{2063}20fba8a0-2b80-4a7d-a17f-85c1854727f8\u{2063}1698148900000"
        let message = PromotionalOfferSigner.message(
            bundleId: "bundleId", keyID: "keyId", productIdentifier: "productId", offerIdentifier: "offerId",
            appAccountToken: "applicationUsername", nonce: Self.nonce, timestamp: Self.timestamp)
        #expect(Array(message.utf8) == Array(expected.utf8))
        let signed = try signer.sign(
            productIdentifier: "productId", offerIdentifier: "offerId", appAccountToken: "applicationUsername", nonce: Self.nonce,
            timestamp: Self.timestamp)
        #expect(PromotionalOfferSignerTests.verifies(signed, message: Array(expected.utf8), with: key.publicKey))
    }

    @Test("a signature Apple's Python library made for the same inputs verifies over our message")
    func applesSignatureVerifiesOverOurMessage() throws {
        let key = try Self.appleKey()
        let message = PromotionalOfferSigner.message(
            bundleId: "bundleId", keyID: "keyId", productIdentifier: "productId", offerIdentifier: "offerId",
            appAccountToken: "applicationUsername", nonce: Self.nonce, timestamp: Self.timestamp)
        let der = try #require(Data(base64Encoded: Self.applePythonSignature))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        #expect(key.publicKey.isValidSignature(signature, for: Array(message.utf8)))
        // One field changed (the token not lower-cased) and it no longer verifies.
        let unlowered = message.replacingOccurrences(of: "applicationusername", with: "applicationUsername")
        #expect(!key.publicKey.isValidSignature(signature, for: Array(unlowered.utf8)))
    }
}
