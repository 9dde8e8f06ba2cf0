import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import JSONCoding
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

/// The simulated Apple signs a transaction version (and a renewal info) once and serves that JWS in
/// history and statuses until the data changes; a change is signed anew, what it serves still
/// verifies, and single-transaction answers (Get Transaction Info, uploads) are signed now.
@Suite("The simulated Apple signs each version once", .serialized, .timeLimit(.minutes(15)))
struct SimulatorSigningCacheTests {
    static let original = "2000000000300000"

    /// The raw answer of an `/inApps` GET, as the simulator sent it.
    static func get<T: Decodable>(_ sim: RunningSimulator, _ path: String, as type: T.Type) async throws -> T {
        var request = HTTPClientRequest(url: sim.baseURL + path)
        request.headers.add(name: "Authorization", value: "Bearer \(try RequestToken.make(credentials: SimFixture.credentials))")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 4 << 20)
        guard response.status.code == 200 else {
            throw TestSupportError("GET \(path) answered \(response.status.code): \(String(buffer: body))")
        }
        return try AppStoreJSON.decoder.decode(T.self, from: Data(body.readableBytesView))
    }

    static func history(_ sim: RunningSimulator) async throws -> [String] {
        try await get(sim, "/inApps/v2/history/\(original)", as: HistoryResponse.self).signedTransactions ?? []
    }

    static func status(_ sim: RunningSimulator) async throws -> LastTransactionsItem {
        let answer = try await get(sim, "/inApps/v1/subscriptions/\(original)", as: StatusResponse.self)
        return try #require(answer.data?.first?.lastTransactions?.first)
    }

    /// A subscription with three monthly transactions, the newest bought a day ago (so it is active).
    static func seed(_ sim: RunningSimulator) throws -> [JWSTransactionDecodedPayload] {
        let start = SimFixture.now().addingTimeInterval(-2 * 30 * 86_400 - 86_400)
        let all = (0..<3).map { i in
            SimFixture.transaction(original: original, id: "\(original)\(i)", purchased: start.addingTimeInterval(Double(i) * 30 * 86_400))
        }
        try sim.apple.store.upsert(all)
        return all
    }

    /// A JWS's payload, decoded without verification (the client verifies separately).
    static func payload<T: Decodable>(_ jws: String, as type: T.Type) throws -> T {
        let segments = jws.split(separator: ".")
        let bytes = try #require(segments.count == 3 ? Base64.decodeURL(String(segments[1])) : nil)
        return try AppStoreJSON.decoder.decode(T.self, from: Data(bytes))
    }

    @Test("two history answers about unchanged transactions carry the identical JWS; a changed transaction gets a new one")
    func transactions() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let seeded = try Self.seed(sim)

        let first = try await Self.history(sim)
        #expect(first.count == 3)
        let again = try await Self.history(sim)
        #expect(again == first, "an unchanged history is served with the JWS first signed")
        // Get Transaction Info (reconcile) and an app's upload are signed now, as Apple does: their JWS
        // becomes an event keyed by its signedDate, so an unchanged transaction reconciled again is new.
        try await Task.sleep(for: .milliseconds(5))
        let info = try await Self.get(sim, "/inApps/v1/transactions/\(seeded[1].transactionId!)", as: TransactionInfoResponse.self)
        let fresh = try #require(info.signedTransactionInfo)
        #expect(!first.contains(fresh))
        let freshDate = try #require(try Self.payload(fresh, as: JWSTransactionDecodedPayload.self).signedDate)
        let historyDate = try #require(try Self.payload(first[1], as: JWSTransactionDecodedPayload.self).signedDate)
        #expect(freshDate > historyDate)
        let uploaded = try sim.apple.signedTransaction(seeded[2].transactionId!, bundleId: SimFixture.bundleId)
        #expect(!first.contains(uploaded))
        #expect(try await Self.history(sim) == first, "and the history is still served as first signed")

        // A refund changes one transaction: it is signed anew, later; the others stay as they were.
        try await Task.sleep(for: .milliseconds(5))
        let refunded = SimFixture.now()
        #expect(
            sim.apple.store.modifyTransaction(seeded[1].transactionId!) {
                $0.revocationDate = refunded
                $0.revocationReason = .refundedForOtherReason
            })
        let changed = try await Self.history(sim)
        #expect(changed.count == 3)
        let changedJWS = try #require(
            changed.first { try Self.payload($0, as: JWSTransactionDecodedPayload.self).transactionId == seeded[1].transactionId })
        #expect(!first.contains(changedJWS), "the refunded transaction is signed again")
        #expect(Set(changed.filter { $0 != changedJWS }) == Set([first[0], first[2]]), "the unchanged ones keep their JWS")
        let before = try Self.payload(first[1], as: JWSTransactionDecodedPayload.self)
        let after = try Self.payload(changedJWS, as: JWSTransactionDecodedPayload.self)
        #expect(after.revocationDate == refunded)
        let signedBefore = try #require(before.signedDate)
        let signedAfter = try #require(after.signedDate)
        #expect(signedAfter > signedBefore, "the new version is dated when it was signed")
        #expect(try await Self.history(sim) == changed, "and then served as signed")

        // What the cache serves verifies like a fresh signature.
        let verified = try await SimFixture.client(sim).transactionHistory(transactionId: Self.original, target: SimFixture.target)
        #expect(Set(verified.compactMap(\.transactionId)) == Set(seeded.compactMap(\.transactionId)))
        #expect(verified.first { $0.transactionId == seeded[1].transactionId }?.revocationDate == refunded)

        // A reset forgets what was signed: the same data is signed again.
        sim.apple.store.reset()
        try sim.apple.store.upsert(seeded)
        let reseeded = try await Self.history(sim)
        #expect(reseeded.count == 3)
        #expect(Set(reseeded).isDisjoint(with: Set(first + changed)))
    }

    @Test("renewal info: the same JWS while it is unchanged, a new one when its override changes")
    func renewalInfo() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        _ = try Self.seed(sim)

        let first = try await Self.status(sim)
        let again = try await Self.status(sim)
        #expect(first.status == .active)
        #expect(again.signedRenewalInfo == first.signedRenewalInfo)
        #expect(again.signedTransactionInfo == first.signedTransactionInfo)
        #expect(try Self.payload(try #require(first.signedRenewalInfo), as: JWSRenewalInfoDecodedPayload.self).autoRenewStatus == .on)

        // The customer turns auto-renew off: the renewal info changes, the transaction does not.
        sim.apple.store.setSubscription(
            Self.original,
            SimulatedSubscriptionOverride(
                renewalInfo: JWSRenewalInfoDecodedPayload(
                    originalTransactionId: Self.original, autoRenewProductId: "com.example.premium.monthly", productId: "com.example.premium.monthly",
                    autoRenewStatus: .off)))
        let turnedOff = try await Self.status(sim)
        #expect(turnedOff.signedRenewalInfo != first.signedRenewalInfo)
        #expect(turnedOff.signedTransactionInfo == first.signedTransactionInfo)
        let info = try Self.payload(try #require(turnedOff.signedRenewalInfo), as: JWSRenewalInfoDecodedPayload.self)
        #expect(info.autoRenewStatus == .off && info.signedDate != nil && info.environment == .sandbox)
        #expect(try await Self.status(sim).signedRenewalInfo == turnedOff.signedRenewalInfo)

        let verified = try await SimFixture.client(sim).allSubscriptionStatuses(transactionId: Self.original, target: SimFixture.target)
        #expect(verified.first?.renewalInfo?.autoRenewStatus == .off)
    }
}
