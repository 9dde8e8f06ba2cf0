import Foundation
import HTTPTypes
import HummingbirdTesting
import IngestService
import NIOCore
import StageRuntime
import TestSupport
import Testing

/// Every way an upload's credential can fail gets 401 with its own code and a challenge, before
/// the broker is involved: these run without one (the producer points nowhere, so an upload that
/// got through would answer 503, not 401).
@Suite("upload refusals without a broker", .timeLimit(.minutes(15)))
struct UploadAuthRefusalTests {
    /// Expects a 401 with `code`, a challenge of `scheme`, and a message that repeats no credential.
    func expectRefused(
        _ result: (status: HTTPResponse.Status, headers: HTTPFields, error: ErrorBody?, text: String), _ code: String,
        scheme: String, secrets: [String] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(result.status == .unauthorized, "\(code): got \(result.status) \(result.text)", sourceLocation: sourceLocation)
        #expect(result.error?.error.code == code, "\(code): got \(result.text)", sourceLocation: sourceLocation)
        #expect(result.headers[.contentType] == "application/json", sourceLocation: sourceLocation)
        #expect(result.headers[HTTPField.Name("X-Request-Id")!].flatMap(UUID.init(uuidString:)) != nil, sourceLocation: sourceLocation)
        let challenge = result.headers[.wwwAuthenticate] ?? ""
        #expect(challenge.hasPrefix(scheme + " "), "\(code): WWW-Authenticate \(challenge)", sourceLocation: sourceLocation)
        for secret in secrets where !secret.isEmpty {
            #expect(!result.text.contains(secret), "\(code): the answer repeats a credential", sourceLocation: sourceLocation)
        }
    }

    @Test(
        "jwt: no token, wrong scheme, malformed, expired, early, wrong issuer or audience, unknown key, bad signature, other algorithms, missing claims"
    )
    func jwtRefusals() async throws {
        let es = await UploadTokenSigner.es256()
        let rs = try await UploadTokenSigner.rs256()
        let stranger = await UploadTokenSigner.es256()  // not in the JWKS
        let impostor = await UploadTokenSigner.es256(kid: es.kid)  // another key under a published kid
        let rsUnderESKid = try await UploadTokenSigner.rs256(kid: es.kid)
        let jwks = try UploadTokens.jwksFile([es, rs])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        let now = Date()
        var expired = TestUploads.claims()
        expired.expires = now.addingTimeInterval(-120)  // past the 60 s leeway
        var early = TestUploads.claims()
        early.notBefore = now.addingTimeInterval(120)
        var wrongIssuer = TestUploads.claims()
        wrongIssuer.issuer = "https://evil.example/"
        var wrongAudience = TestUploads.claims()
        wrongAudience.audience = ["another-service"]
        var noAudience = TestUploads.claims()
        noAudience.audience = nil
        var noExpiry = TestUploads.claims()
        noExpiry.expires = nil
        let longUser = TestUploads.claims(String(repeating: "u", count: 257))
        let valid = try await es.token(TestUploads.claims())
        let parts = valid.split(separator: ".")
        let other = try await es.token(TestUploads.claims("someone-else")).split(separator: ".")
        let tampered = "\(parts[0]).\(other[1]).\(parts[2])"

        let cases: [(String, [(name: String, value: String)], String)] = [
            ("no Authorization header", [], "auth.missing_credentials"),
            ("Basic instead of Bearer", [("Authorization", "Basic dXNlcjpwYXNz")], "auth.missing_credentials"),
            ("not a JWT", bearer("not-a-token"), "auth.malformed_token"),
            ("expired", bearer(try await es.token(expired)), "auth.token_expired"),
            ("not valid yet", bearer(try await rs.token(early)), "auth.token_not_yet_valid"),
            ("wrong issuer", bearer(try await es.token(wrongIssuer)), "auth.wrong_issuer"),
            ("wrong audience", bearer(try await rs.token(wrongAudience)), "auth.wrong_audience"),
            ("no audience", bearer(try await es.token(noAudience)), "auth.wrong_audience"),
            ("unknown key", bearer(try await stranger.token(TestUploads.claims())), "auth.unknown_key"),
            ("another key under a published kid", bearer(try await impostor.token(TestUploads.claims())), "auth.bad_signature"),
            ("claims swapped under a valid signature", bearer(tampered), "auth.bad_signature"),
            ("RS256 naming an ES256 key", bearer(try await rsUnderESKid.token(TestUploads.claims())), "auth.unsupported_algorithm"),
            (
                "HS256", bearer(try UploadTokens.unsignedToken(header: ["alg": "HS256", "kid": es.kid], claims: TestUploads.claims())),
                "auth.unsupported_algorithm"
            ),
            ("alg none", bearer(try UploadTokens.unsignedToken(header: ["alg": "none"], claims: TestUploads.claims())), "auth.unsupported_algorithm"),
            ("no subject", bearer(try await es.token(TestUploads.claims(nil))), "auth.missing_user_claim"),
            ("subject over 256 bytes", bearer(try await es.token(longUser)), "auth.missing_user_claim"),
            ("no expiry", bearer(try await es.token(noExpiry)), "auth.missing_expiry"),
        ]
        try await withUploadIngest(TestUploads.jwt(.file(jwks))) { client in
            for (name, headers, code) in cases {
                let result = try await postUpload(client, body: uploadBody(), headers: headers)
                expectRefused(result, code, scheme: "Bearer", secrets: headers.map { $0.value.replacingOccurrences(of: "Bearer ", with: "") })
                #expect(result.error?.error.code == code, "case: \(name)")
            }
            // Credentials come before the body: an unauthenticated client learns nothing about it.
            expectRefused(try await postUpload(client, body: "not json"), "auth.missing_credentials", scheme: "Bearer")
            // Apple's webhook needs no upload credential (it gets past authentication to the absent broker).
            let notification = try await postUpload(client, body: #"{"signedPayload":"\#(fakeJWS())"}"#, uri: "/v2/notifications")
            #expect(notification.status == .serviceUnavailable)
        }
    }

    @Test("jwt: a custom user claim must be present; sub alone does not do")
    func customClaimRequired() async throws {
        let es = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([es])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        try await withUploadIngest(TestUploads.jwt(.file(jwks), userClaim: "uid")) { client in
            let result = try await postUpload(client, body: uploadBody(), headers: bearer(try await es.token(TestUploads.claims())))
            expectRefused(result, "auth.missing_user_claim", scheme: "Bearer")
            #expect(result.error?.error.message.contains("uid") == true)
        }
    }

    @Test("hmac: missing headers, bad or malformed signature, changed body, stale or future timestamp")
    func hmacRefusals() async throws {
        let body = uploadBody()
        let now = Int(Date().timeIntervalSince1970)
        let good = UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(body.utf8), timestamp: now)
        let wrongSecret = UploadTokens.hmacHeaders(
            secret: Array("another-secret-another-secret-another".utf8), body: Array(body.utf8), timestamp: now)
        let otherBody = UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(uploadBody(userId: "someone-else").utf8), timestamp: now)
        let stale = UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(body.utf8), timestamp: now - 301)
        // Beyond the 300 s window by more than a loaded machine takes to reach this case (at +301 a
        // slow run had the window catch up and the upload pass).
        let future = UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(body.utf8), timestamp: now + 600)
        let upper = good.map { $0.name == "X-Upload-Signature" ? ($0.name, $0.value.uppercased().replacingOccurrences(of: "V1=", with: "v1=")) : $0 }
        let cases: [(String, [(name: String, value: String)], String)] = [
            ("no headers", [], "auth.missing_credentials"),
            ("no timestamp", good.filter { $0.name != "X-Upload-Timestamp" }, "auth.missing_credentials"),
            ("a bearer token instead", bearer("abc.def.ghi"), "auth.missing_credentials"),
            ("another secret", wrongSecret, "auth.bad_hmac"),
            ("signed for another body", otherBody, "auth.bad_hmac"),
            ("not hex", [("X-Upload-Timestamp", "\(now)"), ("X-Upload-Signature", "v1=zz")], "auth.bad_hmac"),
            ("no version prefix", [("X-Upload-Timestamp", "\(now)"), ("X-Upload-Signature", String(good[1].value.dropFirst(3)))], "auth.bad_hmac"),
            ("uppercase hex", upper, "auth.bad_hmac"),
            ("timestamp not a number", [("X-Upload-Timestamp", "yesterday"), good[1]], "auth.invalid_timestamp"),
            ("stale timestamp", stale, "auth.stale_timestamp"),
            ("timestamp in the future", future, "auth.stale_timestamp"),
        ]
        try await withUploadIngest(try TestUploads.hmac()) { client in
            for (name, headers, code) in cases {
                let result = try await postUpload(client, body: body, headers: headers)
                expectRefused(result, code, scheme: "HMAC-SHA256", secrets: [String(decoding: TestUploads.secret, as: UTF8.self)])
                #expect(result.error?.error.code == code, "case: \(name)")
            }
            // A correct signature gets past authentication (to the absent broker: 503).
            let passed = try await postUpload(client, body: body, headers: good)
            #expect(passed.status == .serviceUnavailable)
        }
    }

    @Test("open uploads: 415, 413 and 400 as before, without a broker")
    func openRefusals() async throws {
        try await withUploadIngest(try TestUploads.open()) { client in
            for (body, code) in [
                ("not json", "request.invalid_json"), (#"{"signedTransaction":"a.b"}"#, "request.invalid_jws"),
                (uploadBody(userId: ""), "request.invalid_field"),
            ] {
                let result = try await postUpload(client, body: body)
                #expect(result.status == .badRequest)
                #expect(result.error?.error.code == code)
            }
            let big = try await postUpload(client, body: String(repeating: " ", count: (128 << 10) + 1))
            #expect(big.status == .contentTooLarge)
            #expect(big.error?.error.code == "request.body_too_large")
            let text = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: [.contentType: "text/plain"], body: .init(string: uploadBody())
            ) { $0.status }
            #expect(text == .unsupportedMediaType)
        }
    }
}
