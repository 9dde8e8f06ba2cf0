import AppStore
import Foundation
import TestSupport
import Testing

/// The verifier's payload decoder (`AppStoreJSON.decode`) against Foundation's `JSONDecoder`
/// configured as `AppStoreJSON.decoder`: the same models from well-formed JSON, the same failures
/// for wrong types and inexact numbers, and never a document accepted that Foundation rejects (it
/// is stricter: trailing commas and malformed values no model reads are refused).
@Suite("AppStoreJSON.decode agrees with Foundation's JSONDecoder")
struct AppStoreJSONDecodingTests {
    static func both<T: Decodable & Equatable>(_ type: T.Type, _ json: [UInt8]) -> (fast: DecodingOutcome<T>, foundation: DecodingOutcome<T>) {
        (DecodingOutcome { try AppStoreJSON.decode(type, from: json) }, DecodingOutcome { try AppStoreJSON.decoder.decode(type, from: Data(json)) })
    }

    static func expectAgreement<T: Decodable & Equatable>(
        _ type: T.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let (fast, foundation) = both(type, Array(json.utf8))
        #expect(fast == foundation, "\(T.self) from \(json.prefix(200))", sourceLocation: sourceLocation)
    }

    /// The fast decoder's success implies Foundation's, with the same value.
    static func acceptsOnlyWhatFoundationAccepts<T>(_ outcome: (fast: DecodingOutcome<T>, foundation: DecodingOutcome<T>)) -> Bool {
        outcome.fast == .failure || outcome.fast == outcome.foundation
    }

    @Test("every real Apple payload decodes to the same models", .enabled(if: SharedFixtures.hasRealJWS))
    func realPayloads() throws {
        let files = try SharedFixtures.realJWSFiles()
        #expect(files.count == 57)
        for file in files {
            let segments = try SharedFixtures.realToken(file).split(separator: ".")
            let payload = try #require(Base64.decodeURL(segments[1]))
            let header = try #require(Base64.decodeURL(segments[0]))
            for (fast, foundation) in [
                Self.both(ResponseBodyV2DecodedPayload.self, payload), Self.both(ResponseBodyV2DecodedPayload.self, header),
            ] { #expect(fast == foundation, "\(file)") }
            let transaction = Self.both(JWSTransactionDecodedPayload.self, payload)
            #expect(transaction.fast == transaction.foundation, "\(file)")
            let renewal = Self.both(JWSRenewalInfoDecodedPayload.self, payload)
            #expect(renewal.fast == renewal.foundation, "\(file)")
            let any = Self.both(JSONValue.self, payload)
            #expect(any.fast == any.foundation, "\(file)")
            #expect(any.fast != .failure)
            let headerMap = Self.both([String: JSONValue].self, header)
            #expect(headerMap.fast == headerMap.foundation, "\(file)")
        }
    }

    @Test(
        "edge cases of JSON and of the models' types",
        arguments: [
            #"{"originalTransactionId":"1","quantity":1,"price":9990,"isUpgraded":true}"#,
            #"{"quantity":1.0}"#, #"{"quantity":1e0}"#, #"{"quantity":1.5}"#, #"{"quantity":2147483648}"#,
            #"{"quantity":-2147483648}"#, #"{"price":9223372036854775807}"#, #"{"price":9223372036854775808}"#,
            #"{"price":-0}"#, #"{"price":1E+2}"#, #"{"price":"9990"}"#, #"{"price":null}"#, #"{"price":true}"#,
            #"{"isUpgraded":1}"#, #"{"isUpgraded":"true"}"#, #"{"isUpgraded":null}"#,
            #"{"purchaseDate":1700000000000}"#, #"{"purchaseDate":1700000000000.5}"#, #"{"purchaseDate":"2024"}"#,
            #"{"purchaseDate":1e400}"#, #"{"purchaseDate":-1}"#,
            #"{"appAccountToken":"7E3FB20B-4CDD-4A63-9B6C-1A2D5F1E0C11"}"#, #"{"appAccountToken":"not-a-uuid"}"#,
            #"{"type":"Consumable","inAppOwnershipType":"SOMETHING_NEW","revocationReason":7}"#,
            #"{"productId":"caf\u00e9 \ud83d\ude00 \/ \" \\ \n \t \b \f \r"}"#, #"{"productId":"\ud83d"}"#,
            #"{"productId":"\udc00\ud83d"}"#, #"{"productId":"\x"}"#, #"{"productId":"\u12"}"#,
            "{\"productId\":\"tab\there\"}", "{\"productId\":\"é direct UTF-8\"}",
            #"{"bundleId":"a","bundleId":"b"}"#, #"{"unknown":{"deep":[1,2,{"x":null}]},"bundleId":"a"}"#,
            #"  {"bundleId" : "a" }  "#, #"{"bundleId":"a"} x"#, #"{"bundleId":"a"}{}"#,
            #"{"price":01}"#, #"{"price":.5}"#, #"{"price":1.}"#, #"{"price":+1}"#, #"{"price":1e}"#, #"{"price":-}"#,
            #"{"bundleId":"a",,}"#, #"[,]"#, #"{,}"#,
            #"{bundleId:"a"}"#, #"{'bundleId':'a'}"#, #"[]"#, #"null"#, #""""#, #"{"#, "", "{\"bundleId\":\"a\"\u{0}}",
            #"{"commitmentInfo":{"billingPeriodNumber":3,"commitmentPrice":100}}"#, #"{"commitmentInfo":[]}"#,
            #"{"advancedCommerceInfo":{"a":[1,2.5,"x",true,null,{"b":-3}],"big":1e300,"int":-9223372036854775808}}"#,
            #"{"advancedCommerceInfo":1.0}"#, #"{"advancedCommerceInfo":12345678901234567890}"#,
        ])
    func edgeCases(json: String) {
        Self.expectAgreement(JWSTransactionDecodedPayload.self, json)
        Self.expectAgreement(JSONValue.self, json)
        Self.expectAgreement([String: JSONValue].self, json)
    }

    @Test(
        "stricter than Foundation: trailing commas and malformed values nobody reads are refused",
        arguments: [
            #"{"bundleId":"a",}"#, "{\"bundleId\":\"a\",\n}", #"{"unread":"\x","bundleId":"a"}"#, #"{"unread":1.,"bundleId":"a"}"#,
            "{\"unread\":\"\u{0}\",\"bundleId\":\"a\"}",
        ])
    func stricter(json: String) {
        let (fast, foundation) = Self.both(JWSTransactionDecodedPayload.self, Array(json.utf8))
        #expect(fast == .failure)
        #expect(foundation != .failure, "Foundation changed: this case now agrees")
    }

    @Test("nesting deeper than 512 levels is refused, not a crash")
    func depth() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: DecodingError.self) { try AppStoreJSON.decode(JSONValue.self, from: Array(deep.utf8)) }
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: Never.self) { try AppStoreJSON.decode(JSONValue.self, from: Array(fine.utf8)) }
    }

    @Test("20,000 mutations of a payload: nothing Foundation rejects is accepted, and well-formed JSON decodes alike")
    func mutations() throws {
        // A sample transaction (fixed dates, one with a fraction of a millisecond) with a nested
        // value of every JSON kind, and a notification.
        var transaction = TestPKI.transaction(signedDate: Date(timeIntervalSince1970: 1_700_000_000.123))
        transaction.advancedCommerceInfo = .object(["items": .array([.integer(1), .number(2.5), .string("é\n"), .bool(true), .null])])
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .didRenew, notificationUUID: "u-1",
            data: NotificationData(environment: .sandbox, appAppleId: 42, bundleId: "com.example", status: .active),
            version: "2.0", signedDate: Date(timeIntervalSince1970: 1_700_000_000))
        let originals = [Array(try AppStoreJSON.encoder.encode(transaction)), Array(try AppStoreJSON.encoder.encode(payload))]
        // A fresh seed each run, printed; JSON_MUTATION_SEED replays a failing one.
        let seed = SeededGenerator.seed(from: "JSON_MUTATION_SEED", label: "JSON mutations")
        var random = SeededGenerator(seed: seed)
        var disagreements: [String] = []
        var stricter = 0
        for round in 0..<20_000 {
            let bytes = JSONMutation.mutate(originals[round % 2], using: &random)
            let t = Self.both(JWSTransactionDecodedPayload.self, bytes)
            let n = Self.both(ResponseBodyV2DecodedPayload.self, bytes)
            let v = Self.both(JSONValue.self, bytes)
            // Whatever the fast decoder accepts, Foundation accepts as the same value; a document
            // both accept as JSONValue (every value read) decodes the models identically.
            let acceptedAlike =
                Self.acceptsOnlyWhatFoundationAccepts(t) && Self.acceptsOnlyWhatFoundationAccepts(n)
                && Self.acceptsOnlyWhatFoundationAccepts(v)
            let wellFormed = v.fast != .failure && v.foundation != .failure
            if !acceptedAlike || (wellFormed && (t.fast != t.foundation || n.fast != n.foundation)) {
                disagreements.append(String(decoding: bytes, as: UTF8.self))
            }
            if t.fast == .failure && t.foundation != .failure { stricter += 1 }
            if n.fast == .failure && n.foundation != .failure { stricter += 1 }
        }
        print("JSON mutations: \(stricter) model decodings refused only by the stricter parser")
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements with seed \(seed), e.g. \(disagreements.prefix(3))")
    }
}
