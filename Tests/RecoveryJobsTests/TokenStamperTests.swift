import AppStore
import AppStoreSimulator
import ConsumptionResponder
import EntitlementStore
import EnvironmentSettings
import Foundation
import GrantDecision
import GrantTestSupport
import GrantWorkload
import PipelineRecords
import PostgresNIO
import TestSupport
import Testing
import TokenStamping

/// Grant stamping Apple's token on purchases only an upload tied to a customer (`TOKEN_STAMP_APPS`),
/// against the simulated Apple and a scratch database.
@Suite("Apple's token stamped on upload-owned purchases", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct TokenStamperTests {
    static func purchase(_ original: String, ownership: InAppOwnershipType = .purchased) -> SimulatedPurchase {
        var purchase = ConsumptionResponderTests.purchase(original, .nonConsumable, customer: nil)
        for i in purchase.transactions.indices { purchase.transactions[i].inAppOwnershipType = ownership }
        return purchase
    }

    static func bindings(_ db: ScratchDatabase) async throws -> [String: (customer: UUID, by: String, outcome: String, error: String?)] {
        var found: [String: (UUID, String, String, String?)] = [:]
        let rows = try await db.client.query(
            "SELECT original_transaction_id, customer_id, requested_by, outcome, apple_error FROM token_bindings", logger: ScratchDatabase.logger)
        for try await (id, customer, by, outcome, error) in rows.decode((String, UUID, String, String, String?).self) {
            found[id] = (customer, by, outcome, error)
        }
        return found
    }

    @Test("opting in: off without apps; an app without an API key is a start error naming the variable, for stamping and consumption alike")
    func optingIn() throws {
        let keyPath = try SimFixture.writeAPIKey()
        let base = [
            "APPSTORE_APPS": "\(SimFixture.bundleId)::Sandbox", "APPSTORE_API_CREDENTIALS": "\(SimFixture.bundleId):iss:KEY:\(keyPath)",
        ]
        #expect(try TokenStampConfiguration.read(EnvironmentReader(base)) == nil)
        #expect(try ConsumptionConfiguration.read(EnvironmentReader(base.merging(["CONSUMPTION_APPS": " , "]) { $1 })) == nil)
        let on = try #require(
            try TokenStampConfiguration.read(EnvironmentReader(base.merging(["TOKEN_STAMP_APPS": " \(SimFixture.bundleId) ,"]) { $1 })))
        #expect(on.apps == [SimFixture.bundleId] && on.pollInterval == .seconds(2))
        for variable in ["TOKEN_STAMP_APPS", "CONSUMPTION_APPS"] {
            let env = EnvironmentReader(base.merging([variable: "\(SimFixture.bundleId),com.example.keyless"]) { $1 })
            do {
                _ = variable == "TOKEN_STAMP_APPS" ? try TokenStampConfiguration.read(env) as Any : try ConsumptionConfiguration.read(env) as Any
                Issue.record("\(variable): an app without a key must be refused")
            } catch {
                #expect(error.variable == variable && error.problem.contains("com.example.keyless"), "\(error)")
            }
        }
    }

    @Test(
        "an upload-owned purchase of an opted-in app gets its owner's token at Apple, once; Apple-named, family, other apps' purchases are left alone; a refusal is recorded"
    )
    func stampsUploadOwnedPurchases() async throws {
        try await ScratchDatabase.with { db in
            try await RunningSimulator.with { sim in
                let owner = UUID()
                let base = UInt64(Date().timeIntervalSince1970 * 1000) % 1_000_000_000
                let uploaded = Self.purchase("71\(base)")
                let named = ConsumptionResponderTests.purchase("72\(base)", .nonConsumable, customer: UUID())
                let family = Self.purchase("73\(base)", ownership: .familyShared)
                let unknownAtApple = Self.purchase("74\(base)")
                var otherApp = Self.purchase("75\(base)")
                otherApp.bundleId = "com.example.other"
                for i in otherApp.transactions.indices { otherApp.transactions[i].bundleId = "com.example.other" }
                // Apple holds every purchase but the one it does not know.
                try sim.apple.store.upsert((uploaded.transactions + named.transactions + family.transactions), customerID: "buyer")
                let member = UUID()
                try await ConsumptionResponderTests.apply(
                    db,
                    [
                        uploaded.upload(hint: owner, userId: "owner", authentication: .jwt),
                        named.upload(hint: owner, userId: "owner", authentication: .jwt),
                        family.upload(hint: member, userId: "member", authentication: .jwt),
                        unknownAtApple.upload(hint: owner, userId: "owner", authentication: .jwt),
                        otherApp.upload(hint: owner, userId: "owner", authentication: .jwt),
                    ])
                let stamper = TokenStamper(store: db.store, client: sim.client, apps: [SimFixture.bundleId], logger: ScratchDatabase.logger)
                #expect(try await stamper.stampDue() == 2, "the uploaded purchase and the one Apple does not know")
                #expect(try await stamper.stampDue() == 0, "each is asked about once")

                let bindings = try await Self.bindings(db)
                #expect(Set(bindings.keys) == [uploaded.originalTransactionId, unknownAtApple.originalTransactionId])
                let stamped = try #require(bindings[uploaded.originalTransactionId])
                #expect(stamped.customer == owner && stamped.by == TokenStamper.requestedBy && stamped.outcome == "set")
                #expect(bindings[unknownAtApple.originalTransactionId]?.outcome == "refused")
                #expect(bindings[unknownAtApple.originalTransactionId]?.error == "apple_api.4040010")
                // Apple now names the owner in the purchase's transactions (and will in later ones).
                let atApple = try #require(sim.apple.store.transaction(anyID: uploaded.originalTransactionId, bundleId: SimFixture.bundleId))
                #expect(atApple.payload.appAccountToken == owner)
                #expect(
                    sim.apple.store.transaction(anyID: family.originalTransactionId, bundleId: SimFixture.bundleId)?.payload.appAccountToken == nil)
            }
        }
    }
}
