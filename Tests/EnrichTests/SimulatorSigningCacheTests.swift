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

/// The simulated Apple signs a transaction version once and serves that JWS in history and statuses
/// until the data changes; a change is signed anew and what it serves still verifies. Like Apple,
/// every answer is also dated when it is made: each purchase's last transaction on a history page
/// and each status's renewal info are signed as answered (grant orders lookups by that date), as
/// are single-transaction answers (Get Transaction Info, uploads).
@Suite("The simulated Apple signs each version once, and dates each answer", .serialized, .timeLimit(.minutes(15)))
struct SimulatorSigningCacheTests {
    static let original = "2000000000300000"

    /// The raw answer of an `/inApps` GET, as the simulator sent it.
    static func get<T: Decodable>(_ sim: RunningSimulator, _ path: String, as type: T.Type) async throws -> T {
        var request = HTTPClientRequest(url: sim.baseURL + path)
        request.headers.add(name: "Authorization", value: "Bearer \(try RequestToken.make(credentials: SimFixture.credentials))")
        let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
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

    static func signedDate(_ jws: String) throws -> Date {
        try #require(try payload(jws, as: JWSTransactionDecodedPayload.self).signedDate)
    }

    @Test(
        "two history answers carry the identical JWS for unchanged older transactions and the purchase's last one signed as answered; a changed transaction gets a new one"
    )
    func transactions() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let seeded = try Self.seed(sim)

        let first = try await Self.history(sim)
        #expect(first.count == 3)
        try await Task.sleep(for: .milliseconds(5))
        let again = try await Self.history(sim)
        #expect(Array(again.prefix(2)) == Array(first.prefix(2)), "unchanged older transactions are served with the JWS first signed")
        #expect(try Self.signedDate(again[2]) > Self.signedDate(first[2]), "the purchase's last transaction is dated when each answer was made")
        #expect(try Self.payload(again[2], as: JWSTransactionDecodedPayload.self).transactionId == seeded[2].transactionId)
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
        #expect(Array(try await Self.history(sim).prefix(2)) == Array(first.prefix(2)), "and the history is still served as first signed")

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
        #expect(changed[0] == first[0], "the unchanged older one keeps its JWS")
        let before = try Self.payload(first[1], as: JWSTransactionDecodedPayload.self)
        let after = try Self.payload(changedJWS, as: JWSTransactionDecodedPayload.self)
        #expect(after.revocationDate == refunded)
        let signedBefore = try #require(before.signedDate)
        let signedAfter = try #require(after.signedDate)
        #expect(signedAfter > signedBefore, "the new version is dated when it was signed")
        // Modified last, the refunded transaction is now the purchase's last in the history (Apple
        // sorts by modification): the next answer signs the same refunded content anew.
        let next = try #require(
            try await Self.history(sim).last.map { try Self.payload($0, as: JWSTransactionDecodedPayload.self) })
        #expect(next.transactionId == seeded[1].transactionId && next.revocationDate == refunded)

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

    @Test("a status answer's renewal info is signed as answered (its transaction as first signed), and follows its override")
    func renewalInfo() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        _ = try Self.seed(sim)

        let first = try await Self.status(sim)
        try await Task.sleep(for: .milliseconds(5))
        let again = try await Self.status(sim)
        #expect(first.status == .active)
        let firstInfo = try Self.payload(try #require(first.signedRenewalInfo), as: JWSRenewalInfoDecodedPayload.self)
        let againInfo = try Self.payload(try #require(again.signedRenewalInfo), as: JWSRenewalInfoDecodedPayload.self)
        let firstDate = try #require(firstInfo.signedDate)
        let againDate = try #require(againInfo.signedDate)
        #expect(againDate > firstDate, "each answer is dated when it was made, as Apple's are")
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

        let verified = try await SimFixture.client(sim).allSubscriptionStatuses(transactionId: Self.original, target: SimFixture.target)
        #expect(verified.first?.renewalInfo?.autoRenewStatus == .off)
    }
}
