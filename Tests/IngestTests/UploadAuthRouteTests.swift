import AppStore
import AppStoreSimulator
import Foundation
import HTTPTypes
import HummingbirdTesting
import IngestService
import KafkaClient
import NIOCore
import PipelineRecords
import StageRuntime
import Synchronization
import TestSupport
import Testing

/// Authenticated uploads against the real broker: refusals store nothing, accepted uploads are
/// stored rebuilt with the authenticated user, and the JWKS rotates.
@Suite("authenticated uploads on the broker", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct UploadAuthRouteTests {
    /// The stored body ingest must write for an upload (the raw topic's wire contract).
    func stored(jws: String, token: String? = nil, user: String?, auth: String) -> String {
        var fields = [#""signedTransaction":"\#(jws)""#]
        if let token { fields.append(#""appAccountToken":"\#(token)""#) }
        if let user { fields.append(#""userId":"\#(user)""#) }
        fields.append(#""userAuthentication":"\#(auth)""#)
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// The customer ingest stores for `user`, as the raw body spells it.
    func customer(_ user: String) -> String { CustomerIdentity.customer(forUser: user).uuidString.lowercased() }

    @Test("a body appAccountToken that is not the authenticated user's own customer is refused 403 and stores nothing (jwt and hmac)")
    func foreignCustomerRefused() async throws {
        let es = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([es])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        let victim = CustomerIdentity.customer(forUser: "victim@idp")
        let jws = [fakeJWS(), fakeJWS()]
        let jwtTopic = try await TestServices.makeTopic("auth-foreign-jwt-raw")
        try await withUploadIngest(TestUploads.jwt(.file(jwks)), topic: jwtTopic, bootstrap: TestServices.bootstrapServers) { client in
            let token = bearer(try await es.token(TestUploads.claims("mallory@idp")))
            for foreign in [victim, UUID()] {
                let refused = try await postUpload(
                    client, body: uploadBody(extra: #","appAccountToken":"\#(foreign.uuidString)""#), headers: token)
                #expect(refused.status == .forbidden, "\(refused.text)")
                #expect(refused.error?.error.code == "auth.foreign_account_token")
            }
            // The same user without a token, or with their own, is accepted as their own customer.
            #expect(try await postUpload(client, body: uploadBody(jws: jws[0]), headers: token).status == .ok)
            let asked = try await client.execute(uri: "/v1/customer", method: .get, headers: [.authorization: token[0].value]) { response in
                (response.status, String(buffer: response.body))
            }
            #expect(asked.0 == .ok)
            #expect(asked.1 == #"{"customerId":"\#(customer("mallory@idp"))","userId":"mallory@idp"}"#)
            let unauthenticated = try await client.execute(uri: "/v1/customer", method: .get) { $0.status }
            #expect(unauthenticated == .unauthorized)
        }
        let jwtRecords = try await TopicReader.readAll(jwtTopic)
        #expect(jwtRecords.map(\.text) == [stored(jws: jws[0], token: customer("mallory@idp"), user: "mallory@idp", auth: "jwt")])

        let hmacTopic = try await TestServices.makeTopic("auth-foreign-hmac-raw")
        try await withUploadIngest(try TestUploads.hmac(), topic: hmacTopic, bootstrap: TestServices.bootstrapServers) { client in
            let foreign = uploadBody(userId: "mallory", extra: #","appAccountToken":"\#(victim.uuidString)""#)
            let refused = try await postUpload(
                client, body: foreign, headers: UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(foreign.utf8)))
            #expect(refused.status == .forbidden)
            #expect(refused.error?.error.code == "auth.foreign_account_token")
            // A user whose ID is a UUID is that customer: naming it is naming oneself.
            let own = uploadBody(jws: jws[1], userId: victim.uuidString, extra: #","appAccountToken":"\#(victim.uuidString)""#)
            let accepted = try await postUpload(
                client, body: own, headers: UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(own.utf8)))
            #expect(accepted.status == .ok, "\(accepted.text)")
        }
        let hmacRecords = try await TopicReader.readAll(hmacTopic)
        #expect(hmacRecords.map(\.text) == [stored(jws: jws[1], token: victim.uuidString.lowercased(), user: victim.uuidString, auth: "hmac")])
    }

    @Test(
        "POST /v1/receipts: authenticated like uploads; what the receipt names is stored with the user's customer; unreadable receipts get a typed 400 and store nothing"
    )
    func receipts() async throws {
        let es = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([es])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        let purchase = JWSTransactionDecodedPayload(
            originalTransactionId: "2000000000970000", transactionId: "2000000000970001", bundleId: "com.example.uploads", productId: "premium",
            quantity: 1, environment: .sandbox)
        let appReceipt = try SimulatedReceipt.appReceipt(bundleId: "com.example.uploads", transactions: [purchase])
        let topic = try await TestServices.makeTopic("auth-receipt-raw")
        try await withUploadIngest(TestUploads.jwt(.file(jwks)), topic: topic, bootstrap: TestServices.bootstrapServers) { client in
            let token = bearer(try await es.token(TestUploads.claims("carol@idp")))
            #expect(try await postUpload(client, body: #"{"appReceipt":"\#(appReceipt)"}"#, headers: [], uri: "/v1/receipts").status == .unauthorized)
            let refusals: [(String, String)] = [
                (#"{"appReceipt":"not base64!"}"#, "receipt.not_base64"),
                (#"{"appReceipt":"\#(Data("just text".utf8).base64EncodedString())"}"#, "receipt.malformed"),
                (#"{"appReceipt":"\#(appReceipt.prefix(appReceipt.count / 2))"}"#, "receipt.malformed"),
                (#"{"appReceipt":"\#(try SimulatedReceipt.appReceipt(bundleId: "com.example.uploads", purchases: []))"}"#, "receipt.no_purchase"),
                (#"{"receipt":"\#(appReceipt)"}"#, "request.missing_field"),
                (#"{"appReceipt":"\#(appReceipt)","transactionReceipt":"\#(appReceipt)"}"#, "request.invalid_field"),
                (#"{"appReceipt":"\#(appReceipt)","appAccountToken":"\#(UUID().uuidString)"}"#, "auth.foreign_account_token"),
            ]
            for (body, code) in refusals {
                let answer = try await postUpload(client, body: body, headers: token, uri: "/v1/receipts")
                #expect(answer.error?.error.code == code, "\(body.prefix(60)): \(answer.text)")
                #expect(answer.status == (code.hasPrefix("auth.") ? .forbidden : .badRequest))
            }
            let accepted = try await postUpload(client, body: #"{"appReceipt":"\#(appReceipt)"}"#, headers: token, uri: "/v1/receipts")
            #expect(accepted.status == .ok, "\(accepted.text)")
            let single = try await postUpload(
                client, body: #"{"transactionReceipt":"\#(SimulatedReceipt.transactionReceipt(purchase))"}"#, headers: token, uri: "/v1/receipts")
            #expect(single.status == .ok, "\(single.text)")
        }
        let records = try await TopicReader.readAll(topic)
        let customer = customer("carol@idp")
        #expect(
            records.map(\.text) == [
                #"{"receipt":{"transactionId":"2000000000970000","bundleId":"com.example.uploads","environment":"Sandbox"},"appAccountToken":"\#(customer)","userId":"carol@idp","userAuthentication":"jwt"}"#,
                #"{"receipt":{"transactionId":"2000000000970001","bundleId":"com.example.uploads","environment":"Sandbox"},"appAccountToken":"\#(customer)","userId":"carol@idp","userAuthentication":"jwt"}"#,
            ])
        #expect(records.allSatisfy { $0.headers.string(PipelineHeader.source) == "app-receipt" })
    }

    @Test("refused uploads leave nothing on the raw topic; the one accepted upload is the only record")
    func refusalsStoreNothing() async throws {
        let es = await UploadTokenSigner.es256()
        let stranger = await UploadTokenSigner.es256()
        let impostor = await UploadTokenSigner.es256(kid: es.kid)
        let jwks = try UploadTokens.jwksFile([es])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        var expired = TestUploads.claims()
        expired.expires = Date().addingTimeInterval(-3600)
        var wrongAudience = TestUploads.claims()
        wrongAudience.audience = ["someone-else"]
        var wrongIssuer = TestUploads.claims()
        wrongIssuer.issuer = "https://evil.example/"
        let refused: [[(name: String, value: String)]] = [
            [], bearer(try await es.token(expired)), bearer(try await es.token(wrongAudience)),
            bearer(try await es.token(wrongIssuer)), bearer(try await stranger.token(TestUploads.claims())),
            bearer(try await impostor.token(TestUploads.claims())),
        ]
        let jwtTopic = try await TestServices.makeTopic("auth-jwt-raw")
        try await withUploadIngest(TestUploads.jwt(.file(jwks)), topic: jwtTopic, bootstrap: TestServices.bootstrapServers) { client in
            for headers in refused {
                let refusal = try await postUpload(client, body: uploadBody(), headers: headers)
                #expect(refusal.status == .unauthorized)
            }
            let token = try await es.token(TestUploads.claims())
            let accepted = try await postUpload(client, body: uploadBody(), headers: bearer(token))
            #expect(accepted.status == .ok)
        }
        let jwtRecords = try await TopicReader.readAll(jwtTopic)
        #expect(jwtRecords.count == 1)
        #expect(jwtRecords.first?.text.contains(#""userAuthentication":"jwt""#) == true)

        let body = uploadBody()
        let now = Int(Date().timeIntervalSince1970)
        let hmacTopic = try await TestServices.makeTopic("auth-hmac-raw")
        try await withUploadIngest(try TestUploads.hmac(), topic: hmacTopic, bootstrap: TestServices.bootstrapServers) { client in
            let bad = UploadTokens.hmacHeaders(secret: Array("not-the-shared-secret-not-the-shared".utf8), body: Array(body.utf8), timestamp: now)
            let stale = UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(body.utf8), timestamp: now - 3600)
            for headers in [[], bad, stale] {
                let refusal = try await postUpload(client, body: body, headers: headers)
                #expect(refusal.status == .unauthorized)
            }
            let good = UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(body.utf8), timestamp: now)
            let accepted = try await postUpload(client, body: body, headers: good)
            #expect(accepted.status == .ok)
        }
        let hmacRecords = try await TopicReader.readAll(hmacTopic)
        #expect(hmacRecords.count == 1)
        #expect(hmacRecords.first?.text.contains(#""userAuthentication":"hmac""#) == true)
    }

    @Test("RS256 and ES256 accepted: the token's claim is the stored userId, marked jwt, whatever the body says")
    func tokenUserStored() async throws {
        let es = await UploadTokenSigner.es256()
        let rs = try await UploadTokenSigner.rs256()
        let jwks = try UploadTokens.jwksFile([es, rs])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        let topic = try await TestServices.makeTopic("auth-user-raw")
        // The body may repeat the user's own customer (in any case); ingest stores the customer lower-cased.
        let ownCustomer = CustomerIdentity.customer(forUser: "user-es")
        var withinLeeway = TestUploads.claims("user-es")
        withinLeeway.expires = Date().addingTimeInterval(-20)
        withinLeeway.audience = ["another-service", TestUploads.audience]
        let esToken = try await es.token(withinLeeway)
        let rsToken = try await rs.token(TestUploads.claims("user-rs"))
        let jws = [fakeJWS(), fakeJWS(), fakeJWS()]
        try await withUploadIngest(TestUploads.jwt(.file(jwks)), topic: topic, bootstrap: TestServices.bootstrapServers) { client in
            // The body names another user and claims its own authentication: both ignored.
            let claimingBody = uploadBody(
                jws: jws[0], userId: "attacker", extra: #","appAccountToken":"\#(ownCustomer.uuidString)","userAuthentication":"none","admin":true"#)
            let es256 = try await postUpload(client, body: claimingBody, headers: bearer(esToken))
            #expect(es256.status == .ok, "\(es256.text)")
            let rs256 = try await postUpload(client, body: uploadBody(jws: jws[1], userId: nil), headers: bearer(rsToken))
            #expect(rs256.status == .ok, "\(rs256.text)")
        }
        let records = try await TopicReader.read(topic) { $0.count >= 2 }
        #expect(
            records.map(\.text) == [
                stored(jws: jws[0], token: customer("user-es"), user: "user-es", auth: "jwt"),
                stored(jws: jws[1], token: customer("user-rs"), user: "user-rs", auth: "jwt"),
            ])
        #expect(records.allSatisfy { $0.keyString == sha256Hex($0.text) })
        #expect(records.allSatisfy { $0.headers.string(PipelineHeader.source) == "app-upload" })

        // A configured claim names the user instead of sub.
        let custom = try await TestServices.makeTopic("auth-claim-raw")
        var claims = TestUploads.claims("sub-is-not-used")
        claims.extra = ["uid": "user-from-uid"]
        let uidToken = try await es.token(claims)
        try await withUploadIngest(TestUploads.jwt(.file(jwks), userClaim: "uid"), topic: custom, bootstrap: TestServices.bootstrapServers) {
            client in
            let result = try await postUpload(client, body: uploadBody(jws: jws[2]), headers: bearer(uidToken))
            #expect(result.status == .ok, "\(result.text)")
        }
        let customRecords = try await TopicReader.read(custom) { !$0.isEmpty }
        #expect(customRecords.first?.text == stored(jws: jws[2], token: customer("user-from-uid"), user: "user-from-uid", auth: "jwt"))
    }

    @Test("hmac: the backend vouches for the body's userId, stored marked hmac")
    func hmacUserStored() async throws {
        let topic = try await TestServices.makeTopic("auth-hmacuser-raw")
        let jws = fakeJWS()
        let body = uploadBody(jws: jws, userId: #"user \"quoted\" \\ back"#, extra: #","unknown":[1,2]"#)
        try await withUploadIngest(try TestUploads.hmac(), topic: topic, bootstrap: TestServices.bootstrapServers) { client in
            let result = try await postUpload(
                client, body: body, headers: UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(body.utf8)))
            #expect(result.status == .ok, "\(result.text)")
        }
        let records = try await TopicReader.read(topic) { !$0.isEmpty }
        let record = try #require(records.first)
        #expect(record.text == stored(jws: jws, token: customer(#"user "quoted" \ back"#), user: #"user \"quoted\" \\ back"#, auth: "hmac"))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: String])
        #expect(parsed["userId"] == #"user "quoted" \ back"#)
    }

    @Test("JWKS over HTTP: a key published later is accepted, a withdrawn one refused after refresh, unknown kids refetch at most once per interval")
    func rotation() async throws {
        let first = await UploadTokenSigner.es256()
        let second = try await UploadTokenSigner.rs256()
        let server = JWKSServer(UploadTokens.jwks([first]))
        let topic = try await TestServices.makeTopic("auth-rotate-raw")
        try await server.serving { url in
            let keys = try JWTUploadSettings.KeySource.parse(url.absoluteString, allowLoopbackHTTP: true)
            let uploads = TestUploads.jwt(keys, refresh: .milliseconds(500), refetchMinimum: .zero)
            try await withUploadIngest(uploads, topic: topic, bootstrap: TestServices.bootstrapServers) { client in
                let firstToken = bearer(try await first.token(TestUploads.claims("user-1")))
                let secondToken = bearer(try await second.token(TestUploads.claims("user-2")))
                let accepted = try await postUpload(client, body: uploadBody(), headers: firstToken)
                #expect(accepted.status == .ok)
                let unknown = try await postUpload(client, body: uploadBody(), headers: secondToken)
                #expect(unknown.error?.error.code == "auth.unknown_key")

                // The provider rotates the second key in: the unknown kid makes ingest fetch again.
                server.publish(UploadTokens.jwks([first, second]))
                let rotated = try await postUpload(client, body: uploadBody(), headers: secondToken)
                #expect(rotated.status == .ok, "\(rotated.text)")

                // Then withdraws the first: once the cached set is older than the refresh interval, it goes.
                server.publish(UploadTokens.jwks([second]))
                var refused = false
                for _ in 0..<50 where !refused {
                    try await Task.sleep(for: .milliseconds(200))
                    refused = try await postUpload(client, body: uploadBody(), headers: firstToken).error?.error.code == "auth.unknown_key"
                }
                #expect(refused, "a withdrawn key is refused after the refresh")
            }
        }

        // With a minimum interval, made-up kids cost the provider one fetch, not one per request.
        let limited = JWKSServer(UploadTokens.jwks([first]))
        try await limited.serving { url in
            let keys = try JWTUploadSettings.KeySource.parse(url.absoluteString, allowLoopbackHTTP: true)
            try await withUploadIngest(TestUploads.jwt(keys, refetchMinimum: .seconds(60)), topic: topic, bootstrap: TestServices.bootstrapServers) {
                client in
                let token = try await first.token(TestUploads.claims())
                let accepted = try await postUpload(client, body: uploadBody(), headers: bearer(token))
                #expect(accepted.status == .ok)
                for _ in 0..<5 {
                    let madeUp = await UploadTokenSigner.es256()
                    let token = try await madeUp.token(TestUploads.claims())
                    let result = try await postUpload(client, body: uploadBody(), headers: bearer(token))
                    #expect(result.error?.error.code == "auth.unknown_key")
                }
            }
        }
        let limitedFetches = limited.fetches.load(ordering: .relaxed)
        #expect(limitedFetches == 1, "one fetch at first use, none for the five unknown kids within the interval")
        let rotationFetches = server.fetches.load(ordering: .relaxed)
        #expect(rotationFetches >= 3)
    }

    @Test("hygiene: notifications stored rebuilt, unsafe X-Request-Id replaced, the 200 answer is JSON")
    func hygiene() async throws {
        let es = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([es])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        let topic = try await TestServices.makeTopic("auth-hygiene-raw")
        let jws = fakeJWS()
        let safeID = "abc:DEF_1.2-3"
        try await withUploadIngest(TestUploads.jwt(.file(jwks)), topic: topic, bootstrap: TestServices.bootstrapServers) { client in
            // Apple's webhook needs no upload credential; its unknown fields are dropped too.
            let unsafe = try await postUpload(
                client, body: #"{"signedPayload":"\#(jws)","injected":"x"}"#, headers: [("X-Request-Id", #"a"b <script>"#)],
                uri: "/v2/notifications")
            #expect(unsafe.status == .ok)
            let replaced = try #require(unsafe.headers[HTTPField.Name("X-Request-Id")!])
            #expect(UUID(uuidString: replaced) != nil)
            let safe = try await postUpload(
                client, body: #"{"signedPayload":"\#(jws)"}"#, headers: [("X-Request-Id", safeID)], uri: "/v2/notifications")
            #expect(safe.headers[HTTPField.Name("X-Request-Id")!] == safeID)
            for answer in [unsafe.text, safe.text] {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])
                #expect(object["status"] as? String == "accepted")
                #expect(object["partition"] is Int && object["offset"] is Int)
            }
            #expect(safe.text.contains(#""requestId":"\#(safeID)""#))
            let tooLong = try await postUpload(
                client, body: #"{"signedPayload":"\#(jws)"}"#, headers: [("X-Request-Id", String(repeating: "a", count: 129))],
                uri: "/v2/notifications")
            #expect(tooLong.headers[HTTPField.Name("X-Request-Id")!].flatMap(UUID.init(uuidString:)) != nil)
        }
        let records = try await TopicReader.read(topic) { $0.count >= 3 }
        #expect(records.count == 3)
        #expect(records.allSatisfy { $0.text == #"{"signedPayload":"\#(jws)"}"# })
        #expect(records.map { $0.headers.string(PipelineHeader.requestID) ?? "" }.filter { UUID(uuidString: $0) != nil }.count == 2)
        #expect(records.contains { $0.headers.string(PipelineHeader.requestID) == safeID })
        #expect(Set(records.map(\.keyString)).count == 1, "one stored body, one key")
    }
}
