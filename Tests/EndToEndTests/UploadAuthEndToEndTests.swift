import AppStore
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import GrantTestSupport
import NIOCore
import NIOHTTP1
import PipelineRecords
import PostgresNIO
import SimulatedCustomers
import TestSupport
import Testing

/// Uploads through the whole pipeline with ingest requiring the app's identity provider's tokens
/// (`INGEST_UPLOAD_AUTH=jwt`): a valid token's subject is its own customer and that customer's
/// external user ID; another user of the same provider can take, name or link no one else's
/// customer; uploads without a valid token are refused and reach nothing.
@Suite(
    "Uploads end to end: only authenticated users are linked to purchases",
    .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized, .timeLimit(.minutes(15)))
struct UploadAuthEndToEndTests {
    static let issuer = "https://id.example.test"
    static let audience = "entitlements-e2e"

    @Test(
        "a token's subject is its own customer; another user's older copy (before and after the owner's upload), foreign body token and gift purchase change no owner, link or entitlement"
    )
    func authenticatedUploads() async throws {
        let identityProvider = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([identityProvider])
        let settings = [
            "INGEST_UPLOAD_AUTH": "jwt", "INGEST_UPLOAD_JWKS": jwks, "INGEST_UPLOAD_ISSUER": Self.issuer,
            "INGEST_UPLOAD_AUDIENCE": Self.audience,
        ]
        try await PipelineUnderTest.with(ingest: settings) { pipeline in
            let apple = try SimulatedApple(stateDirectory: pipeline.stateDirectory)
            let signer = try apple.authority.makeSigner()
            let product = SimulationCatalog.standard(bundleId: pipeline.bundleId).lifetime
            let purchased = Date().addingTimeInterval(-86_400)
            let id = "88\(String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(14))"
            // A one-time purchase whose transaction carries no appAccountToken: only uploads name the buyer.
            var transaction = SimFixture.transaction(
                original: id, id: id, purchased: purchased, type: .nonConsumable, product: product.productId, price: product.price,
                bundleId: pipeline.bundleId)
            transaction.signedDate = purchased
            #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [transaction])) == 201)
            let oldCopy = try signer.sign(transaction)
            transaction.signedDate = Date().addingTimeInterval(-60)
            let aliceCopy = try signer.sign(transaction)
            transaction.signedDate = Date().addingTimeInterval(-30)
            let bobCopy = try signer.sign(transaction)

            // A second purchase, bought by mallory with the victim's customer as its token (Apple names the victim).
            let victim = CustomerIdentity.customer(forUser: "victim@idp")
            let id2 = "89\(String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(14))"
            var gift = SimFixture.transaction(
                original: id2, id: id2, purchased: purchased, type: .nonConsumable, product: product.productId, price: product.price,
                bundleId: pipeline.bundleId)
            gift.appAccountToken = victim
            gift.signedDate = Date().addingTimeInterval(-10)
            #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [gift])) == 201)
            let giftCopy = try signer.sign(gift)

            let alice = CustomerIdentity.customer(forUser: "alice@idp")
            let url = "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v1/transactions"
            func upload(_ jws: String, token: String?, customer: UUID? = nil, user: String? = nil) async throws -> (status: Int, body: String) {
                var body: [String: String] = ["signedTransaction": jws]
                if let customer { body["appAccountToken"] = customer.uuidString }
                if let user { body["userId"] = user }
                var request = HTTPClientRequest(url: url)
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
                request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
                let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
                let text = String(buffer: try await response.body.collect(upTo: 1 << 16))
                return (Int(response.status.code), text)
            }
            func token(_ subject: String, expires: Date = Date().addingTimeInterval(600), audience: String = Self.audience) async throws -> String {
                try await identityProvider.token(UploadClaims(issuer: Self.issuer, audience: [audience], subject: subject, expires: expires))
            }

            // Refused before anything is stored: no token, an expired one, one for another audience, one signed by an unknown key.
            let stranger = await UploadTokenSigner.es256()
            let refusals = [
                ("no token", try await upload(oldCopy, token: nil, user: "mallory")),
                ("expired", try await upload(oldCopy, token: try await token("mallory", expires: Date().addingTimeInterval(-3600)))),
                ("wrong audience", try await upload(oldCopy, token: try await token("mallory", audience: "another-app"))),
                (
                    "unknown key",
                    try await upload(
                        oldCopy,
                        token: try await stranger.token(
                            UploadClaims(issuer: Self.issuer, audience: [Self.audience], subject: "mallory")))
                ),
            ]
            for (name, answer) in refusals {
                #expect(answer.status == 401, "\(name): \(answer)")
                #expect(answer.body.contains(#""code":"auth."#), "\(name): \(answer.body)")
            }

            // Alice's app uploads with her token: her own customer, whatever the body's userId says.
            #expect(try await upload(aliceCopy, token: try await token("alice@idp"), user: "someone-else").status == 200)
            try await waitFor(pipeline, events: 1)
            #expect(try await externalUserId(pipeline, alice) == "alice@idp")
            #expect(try await pipeline.entitlements()[alice.uuidString.lowercased()]?.keys.contains(product.entitlement) == true)

            // Mallory, another user of the same identity provider:
            // 1. names alice's customer in the body: 403, nothing stored;
            let mallory = try await token("mallory@idp")
            let named = try await upload(bobCopy, token: mallory, customer: alice)
            #expect(named.status == 403 && named.body.contains(#""code":"auth.foreign_account_token""#), "\(named)")
            // 2. uploads the purchase's older copy as herself: stored, her claim refused (alice's upload was received first);
            #expect(try await upload(oldCopy, token: mallory).status == 200)
            // 3. uploads her own purchase, bought with the victim's customer as its token: Apple names the victim,
            //    and mallory is linked to nobody's customer but her own.
            #expect(try await upload(giftCopy, token: mallory).status == 200)
            try await waitFor(pipeline, events: 3)

            let owned = try await pipeline.entitlements()
            #expect(owned[alice.uuidString.lowercased()]?.keys.contains(product.entitlement) == true, "\(owned)")
            let malloryCustomer = CustomerIdentity.customer(forUser: "mallory@idp").uuidString.lowercased()
            #expect(owned[malloryCustomer] == nil, "mallory holds nothing: \(owned)")
            #expect(owned[victim.uuidString.lowercased()]?.keys.contains(product.entitlement) == true, "Apple's token decides the gift: \(owned)")
            #expect(try await externalUserId(pipeline, alice) == "alice@idp")
            #expect(try await externalUserId(pipeline, victim) == nil, "the victim's user is never written from mallory's upload")
            #expect(try await claimStatus(pipeline, id, CustomerIdentity.customer(forUser: "mallory@idp")) == "refused")

            // Carol's app is still on StoreKit 1: it sends its app receipt. Apple's signed answers for the
            // transaction the receipt names grant her own customer the purchase.
            let id3 = "86\(String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(14))"
            var legacy = SimFixture.transaction(
                original: id3, id: id3, purchased: purchased, type: .nonConsumable, product: product.productId, price: product.price,
                bundleId: pipeline.bundleId)
            legacy.signedDate = Date().addingTimeInterval(-5)
            #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [legacy])) == 201)
            let receipt = try SimulatedReceipt.appReceipt(bundleId: pipeline.bundleId, transactions: [legacy])
            func postReceipt(_ body: String, token: String) async throws -> (status: Int, body: String) {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v1/receipts")
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
                request.body = .bytes(ByteBuffer(string: body))
                let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
                return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 16)))
            }
            let carol = try await token("carol@idp")
            let unreadable = try await postReceipt(#"{"appReceipt":"\#(receipt.prefix(40))"}"#, token: carol)
            #expect(unreadable.status == 400 && unreadable.body.contains(#""code":"receipt."#), "\(unreadable)")
            #expect(try await postReceipt(#"{"appReceipt":"\#(receipt)"}"#, token: carol).status == 200)
            try await waitFor(pipeline, events: 4)
            let carolCustomer = CustomerIdentity.customer(forUser: "carol@idp")
            let afterReceipt = try await pipeline.entitlements()
            #expect(afterReceipt[carolCustomer.uuidString.lowercased()]?.keys.contains(product.entitlement) == true, "\(afterReceipt)")
            #expect(try await externalUserId(pipeline, carolCustomer) == "carol@idp")

            // A purchase Apple names alice by: mallory uploads an older copy before alice's own upload
            // arrives, and again after it. Neither makes her a claimant.
            let id4 = "85\(String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(14))"
            var aliceNamed = SimFixture.transaction(
                original: id4, id: id4, purchased: purchased, type: .nonConsumable, product: product.productId, price: product.price,
                bundleId: pipeline.bundleId)
            aliceNamed.appAccountToken = alice
            aliceNamed.signedDate = purchased
            #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [aliceNamed])) == 201)
            let aliceNamedOld = try signer.sign(aliceNamed)
            aliceNamed.signedDate = Date()
            let aliceNamedNew = try signer.sign(aliceNamed)
            #expect(try await upload(aliceNamedOld, token: mallory).status == 200)
            try await waitFor(pipeline, events: 5)
            #expect(try await upload(aliceNamedNew, token: try await token("alice@idp")).status == 200)
            try await waitFor(pipeline, events: 6)
            aliceNamed.signedDate = Date().addingTimeInterval(-7200)
            #expect(try await upload(try signer.sign(aliceNamed), token: mallory).status == 200)
            try await waitFor(pipeline, events: 7)
            #expect(try await claimStatus(pipeline, id4, CustomerIdentity.customer(forUser: "mallory@idp")) == nil)
            #expect(try await pipeline.entitlements()[malloryCustomer] == nil)
            #expect(try await externalUserId(pipeline, alice) == "alice@idp")

            // Nothing the refused uploads carried reached grant: only the seven accepted uploads are recorded.
            #expect(await pipeline.metric(.ingest, "hb_requests", labelContains: "http_response_status_code=\"401\"") == 4)
            #expect(await pipeline.metric(.ingest, "hb_requests", labelContains: "http_response_status_code=\"403\"") == 1)
            #expect(await pipeline.metric(.ingest, "hb_requests", labelContains: "http_response_status_code=\"400\"") == 1)
            #expect(await pipeline.metric(.verify, "pipeline_messages_processed_total") == 7)
            #expect(try await pipeline.loggedEvents() == 7)
        }
    }

    @Test(
        "with a backend's HMAC: an older copy uploaded by another user, and a purchase Apple names uploaded by another user in both arrival orders, change no owner, link or entitlement"
    )
    func hmacUploads() async throws {
        let secret = Array("a backend's shared secret, 32 bytes or more: e2e".utf8)
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("hmac-\(UUID().uuidString.prefix(8))")
        try Data(secret).write(to: secretFile)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        try await PipelineUnderTest.with(ingest: ["INGEST_UPLOAD_AUTH": "hmac", "INGEST_UPLOAD_HMAC_SECRET_FILE": secretFile.path]) { pipeline in
            let apple = try SimulatedApple(stateDirectory: pipeline.stateDirectory)
            let signer = try apple.authority.makeSigner()
            let product = SimulationCatalog.standard(bundleId: pipeline.bundleId).lifetime
            let purchased = Date().addingTimeInterval(-86_400)
            let alice = CustomerIdentity.customer(forUser: "alice@backend")
            let mallory = CustomerIdentity.customer(forUser: "mallory@backend")
            let victim = CustomerIdentity.customer(forUser: "victim@backend")
            let stamp = String(UInt64(Date().timeIntervalSince1970 * 1000)).suffix(13)
            func purchase(_ prefix: String, token: UUID?) async throws -> JWSTransactionDecodedPayload {
                var t = SimFixture.transaction(
                    original: prefix + stamp, id: prefix + stamp, purchased: purchased, type: .nonConsumable, product: product.productId,
                    price: product.price, bundleId: pipeline.bundleId)
                t.appAccountToken = token
                t.signedDate = purchased
                #expect(try await pipeline.post("/sim/transactions", json: SeedTransactionsRequest(transactions: [t])) == 201)
                return t
            }
            func upload(
                _ transaction: JWSTransactionDecodedPayload, user: String, customer: UUID? = nil, signedAgo: TimeInterval = 60
            ) async throws
                -> (status: Int, body: String)
            {
                var copy = transaction
                copy.signedDate = Date().addingTimeInterval(-signedAgo)
                var fields = ["signedTransaction": try signer.sign(copy), "userId": user]
                if let customer { fields["appAccountToken"] = customer.uuidString }
                let body = try JSONEncoder().encode(fields)
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v1/transactions")
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                for header in UploadTokens.hmacHeaders(secret: secret, body: Array(body)) {
                    request.headers.add(name: header.name, value: header.value)
                }
                request.body = .bytes(ByteBuffer(bytes: body))
                let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
                return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 16)))
            }

            // A purchase without Apple's token: alice's backend uploads it first; mallory's (another
            // user it vouches for) uploads an older copy later. Received later, it is refused.
            let unnamed = try await purchase("87", token: nil)
            #expect(try await upload(unnamed, user: "alice@backend", signedAgo: 30).status == 200)
            try await waitFor(pipeline, events: 1)
            #expect(try await upload(unnamed, user: "mallory@backend", signedAgo: 3_600).status == 200)
            // Purchases Apple names alice by: mallory's older copy before alice's upload, and after it.
            let namedFirst = try await purchase("85", token: alice)
            let namedLater = try await purchase("84", token: alice)
            #expect(try await upload(namedFirst, user: "mallory@backend", signedAgo: 3_600).status == 200)
            try await waitFor(pipeline, events: 3)
            #expect(try await upload(namedFirst, user: "alice@backend").status == 200)
            #expect(try await upload(namedLater, user: "alice@backend").status == 200)
            try await waitFor(pipeline, events: 5)
            #expect(try await upload(namedLater, user: "mallory@backend", signedAgo: 3_600).status == 200)
            // Mallory's own purchase, bought with the victim's customer as its token, and a body naming the victim.
            let gift = try await purchase("83", token: victim)
            #expect(try await upload(gift, user: "mallory@backend").status == 200)
            let foreign = try await upload(gift, user: "mallory@backend", customer: victim)
            #expect(foreign.status == 403 && foreign.body.contains(#""code":"auth.foreign_account_token""#), "\(foreign)")
            try await waitFor(pipeline, events: 7)

            let owned = try await pipeline.entitlements()
            #expect(owned[alice.uuidString.lowercased()]?.keys.contains(product.entitlement) == true, "\(owned)")
            #expect(owned[mallory.uuidString.lowercased()] == nil, "mallory holds nothing: \(owned)")
            #expect(owned[victim.uuidString.lowercased()]?.keys.contains(product.entitlement) == true, "Apple's token decides the gift")
            // Recorded as refused: a claim lost to an earlier upload in ownership_claims; an upload's
            // customer where Apple's token names another in the event's note, and never a claim.
            #expect(try await claimStatus(pipeline, unnamed.transactionId!, mallory) == "refused")
            for id in [unnamed, namedFirst, namedLater].map({ $0.transactionId! }) {
                #expect(try await owner(pipeline, id) == alice, "alice owns \(id)")
            }
            for id in [namedFirst, namedLater].map({ $0.transactionId! }) {
                #expect(try await claimStatus(pipeline, id, mallory) == nil, "mallory never claims \(id)")
                let notes = try await uploadNotes(pipeline, id)
                #expect(
                    notes.filter {
                        $0.contains(
                            "upload's customer \(mallory.uuidString.lowercased()) not counted: Apple's signed token names \(alice.uuidString.lowercased())"
                        )
                    }.count == 1,
                    "\(notes)")
            }
            #expect(try await owner(pipeline, gift.transactionId!) == victim)
            #expect(try await externalUserId(pipeline, alice) == "alice@backend")
            #expect(try await externalUserId(pipeline, victim) == nil, "the victim's user is never written from mallory's upload")
            #expect(await pipeline.metric(.ingest, "hb_requests", labelContains: "http_response_status_code=\"403\"") == 1)
            #expect(try await pipeline.loggedEvents() == 7)
        }
    }

    /// One column of a query's rows, in order.
    private func values<T: PostgresDecodable & Sendable>(_ pipeline: PipelineUnderTest, _ query: PostgresQuery, as: T.Type) async throws -> [T] {
        try await pipeline.withDatabase { client in
            var found: [T] = []
            for try await value in try await client.query(query, logger: ScratchDatabase.logger).decode(T.self) { found.append(value) }
            return found
        }
    }

    /// The notes grant recorded with each upload of the purchase.
    private func uploadNotes(_ pipeline: PipelineUnderTest, _ originalTransactionId: String) async throws -> [String] {
        try await values(
            pipeline,
            "SELECT coalesce(note, '') FROM notifications WHERE original_transaction_id = \(originalTransactionId) AND kind = 'transaction'",
            as: String.self)
    }

    private func owner(_ pipeline: PipelineUnderTest, _ originalTransactionId: String) async throws -> UUID? {
        try await values(
            pipeline, "SELECT customer_id FROM ownership_claims WHERE original_transaction_id = \(originalTransactionId) AND status = 'owner'",
            as: UUID.self
        ).last
    }

    private func claimStatus(_ pipeline: PipelineUnderTest, _ originalTransactionId: String, _ customer: UUID) async throws -> String? {
        try await values(
            pipeline,
            "SELECT status FROM ownership_claims WHERE original_transaction_id = \(originalTransactionId) AND customer_id = \(customer)",
            as: String.self
        ).last
    }

    private func externalUserId(_ pipeline: PipelineUnderTest, _ customer: UUID) async throws -> String? {
        try await values(pipeline, "SELECT external_user_id FROM customers WHERE customer_id = \(customer)", as: String?.self).last ?? nil
    }

    private func waitFor(_ pipeline: PipelineUnderTest, events: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while try await pipeline.loggedEvents() < events {
            guard ContinuousClock.now < deadline else { throw TestSupportError("grant recorded fewer than \(events) events in 120 s") }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
