import Foundation
import TestSupport
import Testing

@testable import AppStore

/// The direct readers of the hot models (`DirectJSONDecodable`) against the general path
/// (`JSONTree` + `JSONTreeDecoder`): the same value for every document the general path decodes, a
/// failure for every one it refuses, over hand-picked edge cases, generated payloads, random
/// mutations and the real Apple fixtures.
@Suite("Direct model decoding agrees with the general JSON path")
struct DirectDecodingTests {
    /// `AppStoreJSON.decode` (direct first) and the general path alone, for one model type.
    static func both<T: Decodable & Equatable>(_ type: T.Type, _ json: [UInt8]) -> (used: DecodingOutcome<T>, general: DecodingOutcome<T>) {
        (DecodingOutcome { try AppStoreJSON.decode(type, from: json) }, DecodingOutcome { try AppStoreJSON.decodeGenerally(type, from: json) })
    }

    /// Whether all four hot models decode `json` alike both ways.
    static func agree(_ json: [UInt8]) -> Bool {
        let n = both(ResponseBodyV2DecodedPayload.self, json)
        let d = both(NotificationData.self, json)
        let t = both(JWSTransactionDecodedPayload.self, json)
        let r = both(JWSRenewalInfoDecodedPayload.self, json)
        return n.used == n.general && d.used == d.general && t.used == t.general && r.used == r.general
    }

    static func expectAgreement(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(agree(Array(json.utf8)), "\(json.prefix(300))", sourceLocation: sourceLocation)
    }

    @Test(
        "edge cases",
        arguments: [
            #"{"originalTransactionId":"1","quantity":1,"price":9990,"isUpgraded":true}"#,
            #"{"quantity":1.0}"#, #"{"quantity":1e0}"#, #"{"quantity":1.5}"#, #"{"quantity":2147483648}"#,
            #"{"quantity":-2147483648}"#, #"{"quantity":-0}"#, #"{"price":9223372036854775807}"#,
            #"{"price":9223372036854775808}"#, #"{"price":999999999999999999}"#, #"{"price":-999999999999999999}"#,
            #"{"price":1E+2}"#, #"{"price":"9990"}"#, #"{"price":null}"#, #"{"price":true}"#,
            #"{"isUpgraded":1}"#, #"{"isUpgraded":"true"}"#, #"{"isUpgraded":null}"#, #"{"isUpgraded":nul}"#,
            #"{"purchaseDate":1700000000000}"#, #"{"purchaseDate":1700000000000.5}"#, #"{"purchaseDate":"2024"}"#,
            #"{"purchaseDate":1e400}"#, #"{"purchaseDate":-1}"#, #"{"purchaseDate":-0}"#, #"{"purchaseDate":0}"#,
            #"{"purchaseDate":999999999999999}"#, #"{"purchaseDate":9999999999999999}"#, #"{"signedDate":1.7e12}"#,
            #"{"appAccountToken":"7E3FB20B-4CDD-4A63-9B6C-1A2D5F1E0C11"}"#,
            #"{"appAccountToken":"7e3fb20b-4cdd-4a63-9b6c-1a2d5f1e0c11"}"#, #"{"appAccountToken":"not-a-uuid"}"#,
            #"{"appAccountToken":"7E3FB20B4CDD-4A63-9B6C-1A2D5F1E0C11-"}"#, #"{"appAccountToken":"\u0037E3FB20B-4CDD-4A63-9B6C-1A2D5F1E0C11"}"#,
            #"{"appAccountToken":"{7E3FB20B-4CDD-4A63-9B6C-1A2D5F1E0C11}"}"#, #"{"appAccountToken":7}"#,
            #"{"type":"Consumable","inAppOwnershipType":"SOMETHING_NEW","revocationReason":7}"#,
            #"{"revocationReason":1.0}"#, #"{"revocationReason":"1"}"#, #"{"autoRenewStatus":1,"expirationIntent":99}"#,
            #"{"productId":"caf\u00e9 \ud83d\ude00 \/ \" \\ \n \t \b \f \r"}"#, #"{"productId":"\ud83d"}"#,
            #"{"productId":"\x"}"#, "{\"productId\":\"tab\there\"}", "{\"productId\":\"é direct UTF-8\"}",
            #"{"bundleId":"a","bundleId":"b"}"#, #"{"bundleId":null,"bundleId":"b"}"#, #"{"bundleId":"a","bundleId":1}"#,
            #"{"bundleId":"a","bundleId":}"#, #"{"b\u0075ndleId":"escaped key"}"#, "{\"bundle\u{212A}d\":\"kelvin\"}",
            "{\"bundleId\u{301}\":\"combining\"}", #"{"unknown":{"deep":[1,2,{"x":null}]},"bundleId":"a"}"#,
            #"{"unknown":[1,2,}"#, #"  {"bundleId" : "a" }  "#, #"{"bundleId":"a"} x"#, #"{"bundleId":"a"}{}"#,
            #"{"bundleId":"a",}"#, #"{"bundleId":"a",,}"#, #"{,}"#, #"{}"#, #"[]"#, #"null"#, #""""#, #"{"#, "",
            #"{"price":01}"#, #"{"price":.5}"#, #"{"price":1.}"#, #"{"price":-}"#, "{\"bundleId\":\"a\"\u{0}}",
            #"{"eligibleWinBackOfferIds":["a","b"]}"#, #"{"eligibleWinBackOfferIds":[]}"#, #"{"eligibleWinBackOfferIds":[null]}"#,
            #"{"eligibleWinBackOfferIds":["a",]}"#, #"{"eligibleWinBackOfferIds":"a"}"#, #"{"eligibleWinBackOfferIds":[1]}"#,
            #"{"commitmentInfo":{"billingPeriodNumber":3,"commitmentPrice":100}}"#, #"{"commitmentInfo":[]}"#,
            #"{"advancedCommerceInfo":{"a":[1,2.5,"x",true,null,{"b":-3}],"big":1e300}}"#, #"{"advancedCommerceInfo":null}"#,
            #"{"notificationType":"DID_RENEW","subtype":"BRAND_NEW_THING","data":{"bundleId":"a","status":1,"appAppleId":42}}"#,
            #"{"data":null}"#, #"{"data":[]}"#, #"{"data":{"appAppleId":"42"}}"#, #"{"data":{"status":"1"}}"#,
            #"{"data":{"bundleId":"a","bundleId":"b"},"data":{"bundleId":"c"}}"#, #"{"data":{"environment":"Sandbox",}}"#,
            #"{"summary":{"requestIdentifier":"r","succeededCount":3}}"#, #"{"summary":{"succeededCount":"3"}}"#,
            #"{"externalPurchaseToken":{"externalPurchaseId":"x","tokenCreationDate":1700000000000}}"#,
            #"{"appData":{"appAppleId":1,"bundleId":"a","environment":"Sandbox"}}"#, #"{"version":"2.0","signedDate":17}"#,
        ])
    func edgeCases(json: String) {
        Self.expectAgreement(json)
    }

    @Test("nesting deeper than 512 levels is refused both ways")
    func depth() {
        for levels in [509, 510, 511, 512, 513] {
            let unknown = String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
            Self.expectAgreement(#"{"unknown":\#(unknown)}"#)
            Self.expectAgreement(#"{"data":{"unknown":\#(unknown)}}"#)
        }
    }

    @Test("typical payloads take the direct path")
    func directPathIsTaken() throws {
        for json in Self.generated(count: 50, seed: 7) {
            #expect(
                ResponseBodyV2DecodedPayload.decodeDirectly(from: json) != nil
                    || JWSTransactionDecodedPayload.decodeDirectly(from: json) != nil, "\(String(decoding: json, as: UTF8.self))")
        }
        let transaction = try AppStoreJSON.encoder.encode(Self.transaction(index: 1))
        #expect(JWSTransactionDecodedPayload.decodeDirectly(from: Array(transaction)) != nil)
        let renewal = try AppStoreJSON.encoder.encode(Self.renewal(index: 1))
        #expect(JWSRenewalInfoDecodedPayload.decodeDirectly(from: Array(renewal)) != nil)
    }

    @Test("2,000 generated payloads and 30,000 mutations of them decode alike")
    func generatedAndMutated() {
        let originals = Self.generated(count: 2_000, seed: 42)
        var disagreements: [String] = []
        for json in originals where !Self.agree(json) {
            disagreements.append(String(decoding: json, as: UTF8.self))
        }
        var random = SeededGenerator(seed: 99)
        for round in 0..<30_000 {
            let bytes = JSONMutation.mutate(originals[round % originals.count], using: &random)
            if !Self.agree(bytes) { disagreements.append(String(decoding: bytes, as: UTF8.self)) }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }

    @Test("the canonical UUID reader agrees with UUID(uuidString:)")
    func uuids() {
        var random = SeededGenerator(seed: 5)
        let characters = Array("0123456789abcdefABCDEFgG-{} ".utf8)
        for _ in 0..<20_000 {
            var text = Array(UUID().uuidString.utf8)
            if Bool.random(using: &random) { text = Array(String(decoding: text, as: UTF8.self).lowercased().utf8) }
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                text[Int.random(in: 0..<text.count, using: &random)] = characters.randomElement(using: &random)!
            }
            let string = String(decoding: text, as: UTF8.self)
            let direct = text.withUnsafeBufferPointer { JSONParser.canonicalUUID($0) }
            #expect(direct == nil || direct == UUID(uuidString: string), "\(string)")
            if direct == nil, let uuid = UUID(uuidString: string) {
                // The general path still reads every form Foundation accepts.
                let json = Array(#"{"appAccountToken":"\#(string)"}"#.utf8)
                #expect((try? AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: json))?.appAccountToken == uuid)
            }
        }
    }

    @Test("every real Apple payload, nested ones too, decodes alike and directly", .enabled(if: SharedFixtures.hasRealJWS))
    func realPayloads() throws {
        let files = try SharedFixtures.realJWSFiles()
        #expect(!files.isEmpty)
        var tokens = try files.map(SharedFixtures.realToken)
        var index = 0
        while index < tokens.count {
            let segments = tokens[index].split(separator: ".")
            index += 1
            guard segments.count == 3, let payload = Base64.decodeURL(segments[1]) else { continue }
            #expect(Self.agree(payload), "\(tokens[index - 1].prefix(60))")
            if let notification = try? AppStoreJSON.decodeGenerally(ResponseBodyV2DecodedPayload.self, from: payload) {
                tokens += [notification.data?.signedTransactionInfo, notification.data?.signedRenewalInfo].compactMap { $0 }
            }
        }
        #expect(tokens.count > files.count)
    }
}

extension DirectDecodingTests {
    /// Notifications, transactions and renewal infos with random fields, encoded as Apple does, some
    /// with their keys reordered, spaced, repeated or unknown ones added.
    static func generated(count: Int, seed: UInt64) -> [[UInt8]] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { index in
            let model: any Encodable
            switch index % 3 {
            case 0: model = notification(index: index, random: &random)
            case 1: model = transaction(index: index, random: &random)
            default: model = renewal(index: index, random: &random)
            }
            var json = String(decoding: (try? AppStoreJSON.encoder.encode(model)) ?? Data(), as: UTF8.self)
            if Bool.random(using: &random) { json = json.replacingOccurrences(of: ",\"", with: " ,\n\t\"") }
            if Bool.random(using: &random) { json = json.replacingOccurrences(of: #"{""#, with: #"{"extra":{"x":[1,{"y":null}]},""#) }
            if Bool.random(using: &random), json.hasSuffix("}") {
                json = String(json.dropLast()) + #","environment":"Production","price":1,"bundleId":null}"#
            }
            return Array(json.utf8)
        }
    }

    static func maybe<T>(_ value: T, _ random: inout SeededGenerator) -> T? {
        Int.random(in: 0..<4, using: &random) == 0 ? nil : value
    }

    static func date(_ random: inout SeededGenerator) -> Date {
        let milliseconds = Double(Int64.random(in: 0...4_000_000_000_000, using: &random))
        return Date(timeIntervalSince1970: (Bool.random(using: &random) ? milliseconds + 0.25 : milliseconds) / 1000)
    }

    static func transaction(index: Int) -> JWSTransactionDecodedPayload {
        var random = SeededGenerator(seed: UInt64(index))
        return transaction(index: index, random: &random)
    }

    static func renewal(index: Int) -> JWSRenewalInfoDecodedPayload {
        var random = SeededGenerator(seed: UInt64(index))
        return renewal(index: index, random: &random)
    }

    static func transaction(index: Int, random: inout SeededGenerator) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: maybe(String(2_000_000_000_000_000 + index), &random),
            transactionId: maybe("t\(index)", &random), webOrderLineItemId: maybe("w", &random),
            bundleId: maybe("com.example.é", &random), productId: maybe("p\"\\\n", &random),
            subscriptionGroupIdentifier: maybe("g", &random), purchaseDate: maybe(date(&random), &random),
            originalPurchaseDate: maybe(date(&random), &random), expiresDate: maybe(date(&random), &random),
            quantity: maybe(Int32.random(in: .min ... .max, using: &random), &random),
            type: maybe([.autoRenewableSubscription, .consumable, .unknown("New")].randomElement(using: &random)!, &random),
            appAccountToken: maybe(UUID(), &random), inAppOwnershipType: maybe(.familyShared, &random),
            signedDate: maybe(date(&random), &random), revocationReason: maybe(.unknown(9), &random),
            revocationDate: maybe(date(&random), &random), isUpgraded: maybe(Bool.random(using: &random), &random),
            offerType: maybe(.introductoryOffer, &random), offerIdentifier: maybe("o", &random),
            environment: maybe([.sandbox, .production, .unknown("Mars")].randomElement(using: &random)!, &random),
            storefront: maybe("USA", &random), storefrontId: maybe("143441", &random),
            transactionReason: maybe(.renewal, &random), currency: maybe("EUR", &random),
            price: maybe(Int64.random(in: .min ... .max, using: &random), &random),
            offerDiscountType: maybe(.freeTrial, &random), appTransactionId: maybe("a", &random),
            offerPeriod: maybe("P1M", &random), revocationType: maybe(.refundFull, &random),
            revocationPercentage: maybe(100_000, &random),
            advancedCommerceInfo: maybe(.object(["k": .array([.integer(1), .number(0.5), .null])]), &random),
            billingPlanType: maybe(.unknown("MONTHLY"), &random),
            commitmentInfo: Int.random(in: 0..<8, using: &random) == 0 ? TransactionCommitmentInfo() : nil)
    }

    static func renewal(index: Int, random: inout SeededGenerator) -> JWSRenewalInfoDecodedPayload {
        JWSRenewalInfoDecodedPayload(
            expirationIntent: maybe(.unknown(42), &random), originalTransactionId: maybe("\(index)", &random),
            autoRenewProductId: maybe("p", &random), productId: maybe("p", &random), autoRenewStatus: maybe(.on, &random),
            isInBillingRetryPeriod: maybe(false, &random), priceIncreaseStatus: maybe(.unknown(3), &random),
            gracePeriodExpiresDate: maybe(date(&random), &random), offerType: maybe(.winBackOffer, &random),
            offerIdentifier: maybe("😀", &random), signedDate: maybe(date(&random), &random),
            environment: maybe(.sandbox, &random), recentSubscriptionStartDate: maybe(date(&random), &random),
            renewalDate: maybe(date(&random), &random), currency: maybe("USD", &random),
            renewalPrice: maybe(Int64.random(in: -1_000...1_000_000, using: &random), &random),
            offerDiscountType: maybe(.payAsYouGo, &random), eligibleWinBackOfferIds: maybe(["a", "b\u{0}"], &random),
            appAccountToken: maybe(UUID(), &random), appTransactionId: maybe("x", &random), offerPeriod: maybe("P1W", &random),
            advancedCommerceInfo: Int.random(in: 0..<8, using: &random) == 0 ? .string("s") : nil,
            commitmentInfo: Int.random(in: 0..<8, using: &random) == 0 ? RenewalCommitmentInfo() : nil,
            renewalBillingPlanType: maybe(.unknown("X"), &random))
    }

    static func notification(index: Int, random: inout SeededGenerator) -> ResponseBodyV2DecodedPayload {
        ResponseBodyV2DecodedPayload(
            notificationType: maybe([.didRenew, .test, .unknown("NEW")].randomElement(using: &random)!, &random),
            subtype: maybe(.unknown("SUB"), &random), notificationUUID: maybe(UUID().uuidString, &random),
            data: maybe(
                NotificationData(
                    environment: maybe(.production, &random), appAppleId: maybe(Int64.random(in: .min ... .max, using: &random), &random),
                    bundleId: maybe("b", &random), bundleVersion: maybe("1", &random),
                    signedTransactionInfo: maybe("eyJ.e30.sig", &random), signedRenewalInfo: maybe("r", &random),
                    status: maybe(.unknown(77), &random), consumptionRequestReason: maybe(.unknown("WHY"), &random)), &random),
            summary: Int.random(in: 0..<8, using: &random) == 0 ? Summary() : nil,
            appData: Int.random(in: 0..<8, using: &random) == 0 ? AppData() : nil,
            version: maybe("2.0", &random), signedDate: maybe(date(&random), &random))
    }
}
