import AppStore
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import GrantTestSupport
import NIOCore
import NIOHTTP1
import PostgresNIO
import SimulatedCustomers
import TestSupport
import Testing

/// Issue 14's acceptance through the whole pipeline with ingest requiring the app's identity
/// provider's tokens (`INGEST_UPLOAD_AUTH=jwt`): a valid token's subject becomes the customer's
/// external user ID and stays it; uploads without a valid token are refused and reach nothing.
@Suite(
    "Uploads end to end: only authenticated users are linked to purchases",
    .enabled(if: TestServices.brokerEnabled && ScratchDatabase.enabled), .serialized, .timeLimit(.minutes(10)))
struct UploadAuthEndToEndTests {
    static let issuer = "https://id.example.test"
    static let audience = "entitlements-e2e"

    @Test("a token's subject becomes the external user ID; another user's later upload does not change it; unauthenticated uploads store nothing")
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

            let customer = UUID()
            let url = "http://127.0.0.1:\(pipeline.ports["ingest"]!)/v1/transactions"
            func upload(_ jws: String, token: String?, user: String? = nil) async throws -> (status: Int, body: String) {
                var body: [String: String] = ["signedTransaction": jws, "appAccountToken": customer.uuidString]
                if let user { body["userId"] = user }
                var request = HTTPClientRequest(url: url)
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
                request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
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

            // Alice's app uploads with her token; the body's userId is not believed.
            #expect(try await upload(aliceCopy, token: try await token("alice@idp"), user: "someone-else").status == 200)
            try await waitFor(pipeline, events: 1)
            #expect(try await externalUserId(pipeline, customer) == "alice@idp")
            let owned = try await pipeline.entitlements()
            #expect(owned[customer.uuidString.lowercased()]?.keys.contains(product.entitlement) == true, "\(owned)")

            // Bob's token on a later copy of the same purchase: recorded, but the link stays Alice's.
            #expect(try await upload(bobCopy, token: try await token("bob@idp")).status == 200)
            try await waitFor(pipeline, events: 2)
            #expect(try await externalUserId(pipeline, customer) == "alice@idp")

            // Nothing the refused uploads carried reached grant: only the two accepted uploads are recorded.
            #expect(await pipeline.metric(.ingest, "hb_requests", labelContains: "http_response_status_code=\"401\"") == 4)
            #expect(await pipeline.metric(.verify, "pipeline_messages_processed_total") == 2)
            #expect(try await pipeline.loggedEvents() == 2)
        }
    }

    private func waitFor(_ pipeline: PipelineUnderTest, events: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while try await pipeline.loggedEvents() < events {
            guard ContinuousClock.now < deadline else { throw TestSupportError("grant recorded fewer than \(events) events in 120 s") }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    private func externalUserId(_ pipeline: PipelineUnderTest, _ customer: UUID) async throws -> String? {
        try await pipeline.withDatabase { client in
            var found: String?
            let rows = try await client.query(
                "SELECT external_user_id FROM customers WHERE customer_id = \(customer)", logger: ScratchDatabase.logger)
            for try await value in rows.decode(String?.self) { found = value }
            return found
        }
    }
}
