import Crypto
import Foundation
import PipelineRecords
import Testing

/// The raw topic's body: what ingest and the recovery jobs write is exactly what verify reads.
@Suite("raw record bodies")
struct RawRecordTests {
    let jws = "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2lnbmF0dXJl"

    @Test("an upload is written from its known fields in the contract's order; the JWS byte for byte")
    func uploadShape() {
        let body = String(
            decoding: RawRecord.uploadBody(
                signedTransaction: jws, appAccountToken: "9F1B0E2A-1D3C-4E5F-8A7B-6C5D4E3F2A1B", userId: "u-1", authentication: .hmac),
            as: UTF8.self)
        #expect(
            body
                == #"{"signedTransaction":"\#(jws)","appAccountToken":"9F1B0E2A-1D3C-4E5F-8A7B-6C5D4E3F2A1B","userId":"u-1","userAuthentication":"hmac"}"#
        )
        let minimal = String(
            decoding: RawRecord.uploadBody(signedTransaction: jws, appAccountToken: nil, userId: nil, authentication: .jwt), as: UTF8.self)
        #expect(minimal == #"{"signedTransaction":"\#(jws)","userAuthentication":"jwt"}"#)
        #expect(String(decoding: RawRecord.notificationBody(signedPayload: jws), as: UTF8.self) == #"{"signedPayload":"\#(jws)"}"#)
    }

    @Test(
        "any userId is escaped into valid JSON and verify reads it back unchanged",
        arguments: [
            #"quote " and backslash \ "#, "new\nline\tand\r", "\u{0}\u{1}\u{1f}\u{7f}", "ünïcødé ✓ 🙂", "</script><!--", "\u{2028}\u{2029}",
            #"\u0041 is not unescaped"#, String(repeating: "é", count: 128),
        ])
    func escaping(_ userId: String) throws {
        let bytes = RawRecord.uploadBody(signedTransaction: jws, appAccountToken: nil, userId: userId, authentication: .open)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: String])
        #expect(parsed == ["signedTransaction": jws, "userId": userId, "userAuthentication": "none"])
        // A control character is refused on reading (ingest never writes one: Postgres cannot store a
        // NUL, and a line break would forge log lines); everything else reads back unchanged.
        if userId.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            #expect(throws: RawRecord.ReadError.self) { try RawRecord.parse(bytes, source: PipelineHeader.Source.appUpload) }
        } else {
            let read = try RawRecord.parse(bytes, source: PipelineHeader.Source.appUpload)
            #expect(read == .transaction(signedTransaction: jws, hints: AppUploadHints(userId: userId, authentication: .open)))
        }
    }

    @Test("what the writers produce, the reader reads: notification and upload with every hint")
    func roundTrip() throws {
        let token = UUID()
        let upload = RawRecord.uploadBody(
            signedTransaction: jws, appAccountToken: token.uuidString.lowercased(), userId: "user-7", authentication: .jwt)
        #expect(
            try RawRecord.parse(upload, source: PipelineHeader.Source.appUpload)
                == .transaction(signedTransaction: jws, hints: AppUploadHints(appAccountToken: token, userId: "user-7", authentication: .jwt)))
        #expect(
            try RawRecord.parse(RawRecord.notificationBody(signedPayload: jws), source: PipelineHeader.Source.appleWebhook)
                == .notification(signedPayload: jws))
    }

    @Test(
        "a body that breaks the contract is refused with its reason",
        arguments: [
            (#"{"signedPayload":"a.b.c"}"#, PipelineHeader.Source.appUpload, "must carry signedTransaction"),
            (#"{"signedPayload":"a.b.c","signedTransaction":"a.b.c"}"#, nil, "both"),
            (#"{}"#, PipelineHeader.Source.appUpload, "no signedTransaction"),
            (#"[1]"#, nil, "not a JSON object"),
            (#"{"signedTransaction":"a.b.c","appAccountToken":"nope"}"#, nil, "appAccountToken"),
            (#"{"signedTransaction":"a.b.c","userId":""}"#, nil, "userId"),
            (#"{"signedTransaction":"a.b.c","userId":"u","userAuthentication":"trust-me"}"#, nil, "userAuthentication"),
        ] as [(String, String?, String)])
    func refusals(_ body: String, _ source: String?, _ reason: String) {
        #expect {
            try RawRecord.parse(Array(body.utf8), source: source)
        } throws: { error in
            (error as? RawRecord.ReadError)?.message.contains(reason) == true
        }
    }

    @Test("the upload rules ingest and verify share: a UUID token in any case; a userId of 1–256 bytes")
    func hintRules() {
        #expect(AppUploadHints.appAccountToken(from: "9f1b0e2a-1d3c-4e5f-8a7b-6c5d4e3f2a1b") != nil)
        #expect(AppUploadHints.appAccountToken(from: "9f1b0e2a") == nil)
        #expect(AppUploadHints.isValidUserId(String(repeating: "x", count: 256)))
        #expect(!AppUploadHints.isValidUserId(String(repeating: "x", count: 257)))
        #expect(!AppUploadHints.isValidUserId(String(repeating: "é", count: 129)))
        #expect(!AppUploadHints.isValidUserId(""))
    }

    @Test("the raw key is the lower-case hex SHA-256 of the body")
    func key() {
        let body = RawRecord.notificationBody(signedPayload: jws)
        let expected = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        #expect(RawRecord.key(of: body) == expected)
        #expect(RawRecord.key(of: []) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}
