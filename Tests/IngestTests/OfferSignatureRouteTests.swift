import Crypto
import EnvironmentSettings
import Foundation
import HTTPTypes
import HummingbirdTesting
import IngestService
import OfferSigning
import PipelineRecords
import TestSupport
import Testing

/// `POST /v1/offers/signature` through Hummingbird's test client: a signature only for the
/// authenticated caller's own customer, refusals with ingest's JSON errors, and no route at all
/// unless offer signing is configured. No broker is involved.
@Suite("Offer signature route")
struct OfferSignatureRouteTests {
    static let bundleId = "com.example.offers"
    static let privateKey = P256.Signing.PrivateKey()

    static func settings(apps: [String] = [bundleId]) throws -> OfferSigningSettings {
        try OfferSigningSettings(key: try OfferSigningKey(keyID: "OFFERKEY01", privateKey: privateKey), issuerID: "issuer-1", bundleIds: apps)
    }

    static func customer(_ user: String) -> String { CustomerIdentity.customer(forUser: user).uuidString.lowercased() }

    static func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// Apple's v1 message for `customer`, built from the documented order, verifies the answer's signature.
    static func verifiesV1(_ answer: [String: Any], product: String, offer: String, customer: String) throws -> Bool {
        let fields = [
            bundleId, "OFFERKEY01", product, offer, customer, try #require(answer["nonce"] as? String),
            "\(try #require(answer["timestamp"] as? Int))",
        ]
        let base64 = try #require(answer["signature"] as? String)
        let der = try #require(Data(base64Encoded: base64))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        return privateKey.publicKey.isValidSignature(signature, for: Array(fields.joined(separator: "\u{2063}").utf8))
    }

    @Test("jwt: v1 and JWS signatures for the caller's own customer; another user's token 403; no credential 401; bad bodies 400")
    func jwtCaller() async throws {
        let es = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([es])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        let alice = Self.customer("alice@idp")
        try await withUploadIngest(TestUploads.jwt(.file(jwks)), offerSigning: try Self.settings()) { client in
            let token = bearer(try await es.token(TestUploads.claims("alice@idp")))
            // The customer is the token's user; repeating it (in any case) is the same request.
            for extra in ["", #","appAccountToken":"\#(alice.uppercased())""#] {
                let signed = try await postUpload(
                    client, body: #"{"type":"promotional-offer-v1","productId":"premium.monthly","offerIdentifier":"promo1"\#(extra)}"#,
                    headers: token, uri: "/v1/offers/signature")
                #expect(signed.status == .ok, "\(signed.text)")
                #expect(signed.headers[.cacheControl] == "no-store")
                let answer = try Self.object(signed.text)
                #expect(answer["appAccountToken"] as? String == alice)
                #expect(answer["keyID"] as? String == "OFFERKEY01")
                #expect(try Self.verifiesV1(answer, product: "premium.monthly", offer: "promo1", customer: alice))
                #expect(try Self.verifiesV1(answer, product: "premium.monthly", offer: "promo1", customer: Self.customer("bob@idp")) == false)
            }
            // The JWS kinds: signed with the key, for the configured app.
            let jws = try await postUpload(
                client,
                body: #"{"type":"promotional-offer","productId":"premium.monthly","offerIdentifier":"promo1","transactionId":"2000000000000001"}"#,
                headers: token, uri: "/v1/offers/signature")
            #expect(jws.status == .ok, "\(jws.text)")
            let compact = try #require(try Self.object(jws.text)["jws"] as? String)
            let claims = try OfferJWSDecoding.claims(compact, key: Self.privateKey.publicKey)
            #expect(claims["aud"] as? String == "promotional-offer")
            #expect(claims["bid"] as? String == Self.bundleId)
            #expect(claims["transactionId"] as? String == "2000000000000001")
            let eligibility = try await postUpload(
                client,
                body: #"{"type":"introductory-offer-eligibility","productId":"premium.monthly","allowIntroductoryOffer":true,"transactionId":"7"}"#,
                headers: token, uri: "/v1/offers/signature")
            #expect(eligibility.status == .ok, "\(eligibility.text)")
            let eligible = try OfferJWSDecoding.claims(
                try #require(try Self.object(eligibility.text)["jws"] as? String), key: Self.privateKey.publicKey)
            #expect(eligible["aud"] as? String == "introductory-offer-eligibility")
            #expect(eligible["allowIntroductoryOffer"] as? Bool == true)

            // Another user's customer: 403, nothing signed.
            let foreign = try await postUpload(
                client,
                body: #"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o","appAccountToken":"\#(Self.customer("bob@idp"))"}"#,
                headers: token, uri: "/v1/offers/signature")
            #expect(foreign.status == .forbidden)
            #expect(foreign.error?.error.code == "auth.foreign_account_token")
            #expect(!foreign.text.contains("signature\":"))
            // No credential: 401 with the challenge, whatever the body.
            let anonymous = try await postUpload(
                client, body: #"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o"}"#, uri: "/v1/offers/signature")
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.error?.error.code == "auth.missing_credentials")
            #expect(anonymous.headers[.wwwAuthenticate] != nil)
            // Bad bodies: 400 with a code and a message.
            let bad: [(String, String)] = [
                ("not json", "request.invalid_json"),
                (#"{"productId":"p","offerIdentifier":"o"}"#, "request.missing_field"),
                (#"{"type":"win-back","productId":"p"}"#, "request.invalid_field"),
                (#"{"type":"promotional-offer-v1","productId":"p"}"#, "request.missing_field"),
                (#"{"type":"introductory-offer-eligibility","productId":"p","allowIntroductoryOffer":true}"#, "request.missing_field"),
                (#"{"type":"promotional-offer","productId":"p","offerIdentifier":"o","transactionId":"abc"}"#, "request.invalid_field"),
                (#"{"type":"promotional-offer-v1","productId":"p\u2063x","offerIdentifier":"o"}"#, "request.invalid_field"),
                (
                    #"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o","bundleId":"com.example.other"}"#,
                    "offer.app_not_configured"
                ),
            ]
            for (body, code) in bad {
                let refused = try await postUpload(client, body: body, headers: token, uri: "/v1/offers/signature")
                #expect(refused.status == .badRequest, "\(body): \(refused.text)")
                #expect(refused.error?.error.code == code, "\(body): \(refused.text)")
                #expect(refused.error?.error.message.isEmpty == false)
            }
        }
    }

    @Test("hmac: the backend names the user; that user's customer is signed for, another's 403, no userId 400, a bad HMAC 401")
    func hmacCaller() async throws {
        try await withUploadIngest(try TestUploads.hmac(), offerSigning: try Self.settings(apps: [Self.bundleId, "com.example.two"])) { client in
            func post(_ body: String, signed: Bool = true) async throws -> (status: HTTPResponse.Status, code: String?, text: String) {
                let headers: [(name: String, value: String)] =
                    signed ? UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(body.utf8)) : [(name: "X-Upload-Timestamp", value: "1")]
                let answer = try await postUpload(client, body: body, headers: headers, uri: "/v1/offers/signature")
                return (answer.status, answer.error?.error.code, answer.text)
            }
            let carol = Self.customer("carol")
            let own = try await post(
                #"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o","userId":"carol","bundleId":"\#(Self.bundleId)"}"#)
            #expect(own.status == .ok, "\(own.text)")
            #expect(try Self.verifiesV1(try Self.object(own.text), product: "p", offer: "o", customer: carol))
            let foreign = try await post(
                #"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o","userId":"carol","bundleId":"\#(Self.bundleId)","appAccountToken":"\#(Self.customer("dave"))"}"#
            )
            #expect(foreign.status == .forbidden && foreign.code == "auth.foreign_account_token")
            let anonymous = try await post(#"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o","bundleId":"\#(Self.bundleId)"}"#)
            #expect(anonymous.status == .badRequest && anonymous.code == "request.missing_field", "\(anonymous.text)")
            // Two apps configured: the body must say which.
            let which = try await post(#"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o","userId":"carol"}"#)
            #expect(which.status == .badRequest && which.code == "request.missing_field")
            let unsigned = try await post(#"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o","userId":"carol"}"#, signed: false)
            #expect(unsigned.status == .unauthorized)
        }
    }

    @Test("without offer signing configured there is no route; with open uploads ingest refuses to start")
    func onlyWhenConfigured() async throws {
        let es = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([es])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        try await withUploadIngest(TestUploads.jwt(.file(jwks))) { client in
            let token = bearer(try await es.token(TestUploads.claims("alice@idp")))
            let answer = try await postUpload(
                client, body: #"{"type":"promotional-offer-v1","productId":"p","offerIdentifier":"o"}"#, headers: token,
                uri: "/v1/offers/signature")
            #expect(answer.status == .notFound)
        }
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("offer-\(UUID().uuidString.prefix(8)).p8").path
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: key))
        defer { try? FileManager.default.removeItem(atPath: key) }
        let env = [
            "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "com.example.offers::Sandbox",
            "OFFER_SIGNING_KEY_FILE": key, "OFFER_SIGNING_KEY_ID": "K", "OFFER_SIGNING_ISSUER_ID": "i", "OFFER_SIGNING_APPS": "com.example.offers",
        ]
        #expect(throws: ConfigurationError.self) { try IngestConfiguration(environment: EnvironmentReader(env)) }
        do {
            _ = try IngestConfiguration(environment: EnvironmentReader(env))
        } catch {
            #expect(error.variable == "OFFER_SIGNING_KEY_FILE" && error.problem.contains("INGEST_UPLOAD_AUTH=none"))
        }
        var hmac = env
        hmac["INGEST_UPLOAD_AUTH"] = "hmac"
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString.prefix(8))").path
        try Data(TestUploads.secret).write(to: URL(fileURLWithPath: secret))
        defer { try? FileManager.default.removeItem(atPath: secret) }
        hmac["INGEST_UPLOAD_HMAC_SECRET_FILE"] = secret
        #expect(try IngestConfiguration(environment: EnvironmentReader(hmac)).offerSigning?.bundleIds == ["com.example.offers"])
    }
}

/// Opens a compact ES256 JWS: checks the signature with `key`, returns the claims.
enum OfferJWSDecoding {
    static func claims(_ jws: String, key: P256.Signing.PublicKey) throws -> [String: Any] {
        let parts = jws.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        func bytes(_ segment: String) throws -> Data {
            var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            text += String(repeating: "=", count: (4 - text.count % 4) % 4)
            return try #require(Data(base64Encoded: text))
        }
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try bytes(parts[2]))
        #expect(key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        return try #require(try JSONSerialization.jsonObject(with: try bytes(parts[1])) as? [String: Any])
    }
}
