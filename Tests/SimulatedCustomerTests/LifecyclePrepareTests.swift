import AppStore
import AppStoreSigning
import AppStoreSimulator
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import SimulatedCustomers
import SimulatedDelivery
import SimulatorLifecycleRoutes
import Testing

/// `POST /sim/lifecycle/prepare`: the simulator applies and signs a whole run at once and answers
/// the requests it would have sent, for a load generator (the end-to-end bench's unpaced phase).
@Suite("The simulated Apple prepares a run's requests ahead", .timeLimit(.minutes(15)))
struct LifecyclePrepareTests {
    static let bundleId = "com.example.entitlements"
    static let authority: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Lifecycle Prepare Tests"))

    static func apple() throws -> SimulatedApple {
        try SimulatedApple(
            authority: authority, apiKey: SimulatorAPIKey(issuerID: "issuer", keyID: "KEY0000002", privateKey: P256.Signing.PrivateKey()))
    }

    /// The answer's lines as (path, body).
    static func lines(_ buffer: ByteBuffer) -> [(path: String, body: String)] {
        String(buffer: buffer).split(separator: "\n").map { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
    }

    static func prepare(_ client: some TestClientProtocol, _ request: LifecyclePrepareRequest) async throws -> TestResponse {
        try await client.execute(
            uri: "/sim/lifecycle/prepare", method: .post, headers: [.contentType: "application/json"],
            body: ByteBuffer(bytes: try AppStoreJSON.encoder.encode(request)))
    }

    @Test("every line is a request the player would send: notifications that verify, about transactions the simulator holds, in step order")
    func preparedRequests() async throws {
        let apple = try Self.apple()
        let runs = LifecycleRuns(apple: apple, defaultBundleId: Self.bundleId)
        let router = Router()
        LifecycleRoutes(runs: runs).register(on: router)
        var prepared = LifecyclePrepareRequest(customers: LifecycleScenario.allCases.count)
        prepared.seed = 4
        prepared.monthSeconds = 600
        prepared.firstCustomerIndex = 2_000
        let request = prepared
        let expected = LifecycleSimulation(catalog: .standard(bundleId: Self.bundleId), month: 600, horizon: Date(), seed: 4)
            .customers(request.customers, firstIndex: 2_000)
        let verifier = try SignedDataVerifier(
            configuration: .init(
                apps: [try AppStoreApp(bundleId: Self.bundleId, environments: [.sandbox])], additionalTrustedRoots: [Self.authority.root]))

        let (first, again) = try await Application(router: router).test(.router) { client in
            let first = try await Self.prepare(client, request)
            #expect(first.status == .ok)
            #expect(first.headers[.contentType] == "text/plain; charset=utf-8")
            // The same customers at other indexes: their own transactions, none of the first run's changed.
            var other = request
            other.firstCustomerIndex = 3_000
            let again = try await Self.prepare(client, other)
            #expect(again.status == .ok)
            var bad = request
            bad.customers = 0
            #expect(try await Self.prepare(client, bad).status == .conflict)
            return (Self.lines(first.body), Self.lines(again.body))
        }

        let steps = expected.flatMap(\.steps)
        #expect(first.filter { $0.path == "/v2/notifications" }.count == steps.compactMap(\.notification).count)
        let uploads = steps.compactMap(\.upload)
        #expect(first.filter { $0.path == "/v1/transactions" }.count == uploads.filter { $0.kind == .signedTransaction }.count)
        #expect(first.filter { $0.path == "/v1/receipts" }.count == uploads.filter { $0.kind == .appReceipt }.count)
        #expect(first.allSatisfy { ["/v2/notifications", "/v1/transactions", "/v1/receipts"].contains($0.path) })

        var kinds: [String] = []
        var firstRunTransactions: Set<String> = []
        var previousSigned = Date.distantPast
        for line in first where line.path == "/v2/notifications" {
            let body = try JSONDecoder().decode([String: String].self, from: Data(line.body.utf8))
            let verified = try await verifier.verifyNotification(signedPayload: try #require(body["signedPayload"]))
            kinds.append("\(verified.payload.notificationType?.rawValue ?? "")/\(verified.payload.subtype?.rawValue ?? "")")
            let signed = try #require(verified.payload.signedDate)
            #expect(signed >= previousSigned, "in step order")
            previousSigned = signed
            if let transaction = verified.transaction, let id = transaction.transactionId {
                firstRunTransactions.insert(id)
                // What enrich will look up is there, in the customer's history.
                let stored = try #require(apple.store.transaction(anyID: id, bundleId: Self.bundleId))
                #expect(stored.payload.originalTransactionId == transaction.originalTransactionId)
                #expect(Int(id)! / 1_000 - 7_000_000_000_000 >= 2_000 && Int(id)! / 1_000 - 7_000_000_000_000 < 2_000 + request.customers)
            }
        }
        let expectedKinds = steps.compactMap(\.notification).map { "\($0.type.rawValue)/\($0.subtype?.rawValue ?? "")" }
        #expect(kinds.sorted() == expectedKinds.sorted())

        let secondRunTransactions = Set(
            try await again.filter { $0.path == "/v2/notifications" }.asyncCompactMap { line -> String? in
                let body = try JSONDecoder().decode([String: String].self, from: Data(line.body.utf8))
                return try await verifier.verifyNotification(signedPayload: body["signedPayload"] ?? "").transaction?.transactionId
            })
        #expect(!secondRunTransactions.isEmpty && secondRunTransactions.isDisjoint(with: firstRunTransactions))
        for id in firstRunTransactions {
            #expect(apple.store.transaction(anyID: id, bundleId: Self.bundleId) != nil, "the first run's \(id) is still held")
        }
        let status = runs.status
        #expect(status.state == "prepared")
        #expect(status.report?.notifications == expectedKinds.count)
        // Every customer, and each one whose token Apple re-assigned away (expected to hold nothing).
        #expect(status.customers.count == request.customers + expected.flatMap(\.formerCustomers).count)
        #expect(status.customers.filter { $0.scenario.hasSuffix("(former)") }.allSatisfy { $0.entitlements.isEmpty && $0.consumables.isEmpty })
    }
}

extension Sequence {
    func asyncCompactMap<T>(_ transform: (Element) async throws -> T?) async rethrows -> [T] {
        var result: [T] = []
        for element in self {
            if let value = try await transform(element) { result.append(value) }
        }
        return result
    }
}
