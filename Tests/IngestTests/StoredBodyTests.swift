import Foundation
import Testing

@testable import IngestService

/// The raw body ingest writes (the wire contract verify and grant read) and the request-id rule.
@Suite("stored bodies and request ids")
struct StoredBodyTests {
    @Test("an upload is rebuilt from its known fields in the contract's order; the JWS byte for byte")
    func transactionShape() throws {
        let jws = fakeJWS()
        let body = String(
            decoding: StoredBody.transaction(
                signedTransaction: jws, appAccountToken: "9F1B0E2A-1D3C-4E5F-8A7B-6C5D4E3F2A1B", userId: "u-1", authentication: .hmac), as: UTF8.self)
        #expect(
            body
                == #"{"signedTransaction":"\#(jws)","appAccountToken":"9F1B0E2A-1D3C-4E5F-8A7B-6C5D4E3F2A1B","userId":"u-1","userAuthentication":"hmac"}"#
        )
        let minimal = String(
            decoding: StoredBody.transaction(signedTransaction: jws, appAccountToken: nil, userId: nil, authentication: .jwt), as: UTF8.self)
        #expect(minimal == #"{"signedTransaction":"\#(jws)","userAuthentication":"jwt"}"#)
        #expect(String(decoding: StoredBody.notification(signedPayload: jws), as: UTF8.self) == #"{"signedPayload":"\#(jws)"}"#)
    }

    @Test(
        "any userId is escaped into valid JSON and reads back unchanged",
        arguments: [
            #"quote " and backslash \ "#, "new\nline\tand\r", "\u{0}\u{1}\u{1f}\u{7f}", "ünïcødé ✓ 🙂", "</script><!--", "\u{2028}\u{2029}",
            #"\u0041 is not unescaped"#, String(repeating: "é", count: 128),
        ])
    func escaping(_ userId: String) throws {
        let bytes = StoredBody.transaction(signedTransaction: fakeJWS(), appAccountToken: nil, userId: userId, authentication: .none)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: String])
        #expect(parsed["userId"] == userId)
        #expect(parsed["userAuthentication"] == "none")
        #expect(parsed.count == 3)
    }

    @Test("X-Request-Id is kept only as 1–128 of A-Z a-z 0-9 . _ : -")
    func requestIDs() {
        for safe in ["a", "req-1", "abc:DEF_1.2-3", String(repeating: "x", count: 128), "00-0af7651916cd43dd"] {
            #expect(RequestID.accepted(safe) == safe)
        }
        for unsafe in ["", "a b", #"quote"and\backslash"#, "line\nbreak", String(repeating: "x", count: 129), "ü", "a/b", "{json}"] {
            let replaced = RequestID.accepted(unsafe)
            #expect(replaced != unsafe)
            #expect(UUID(uuidString: replaced) != nil)
        }
        #expect(UUID(uuidString: RequestID.accepted(nil)) != nil)
    }

    @Test("traceparent is carried only in the W3C form")
    func traceparent() {
        #expect(IngestHandler.isTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
        #expect(!IngestHandler.isTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"))
        #expect(!IngestHandler.isTraceparent("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"))
        #expect(!IngestHandler.isTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nX: y"))
    }
}
