import AppStore
import AppStoreServerAPI
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import TestSupport

/// Signing material shared by the enrich tests: the simulator's CA, a forger's CA, the API key.
enum SimFixture {
    static let bundleID = "com.example.entitlements"
    static let authority: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Enrich Tests Sim"))
    static let forger: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Enrich Tests Forger"))
    static let apiKey = SimulatorAPIKey(issuerID: "6b1f2c3d-1111-4e4e-9a9a-0123456789ab", keyID: "SIMKEY0001", privateKey: P256.Signing.PrivateKey())

    static var credentials: AppStoreAPICredentials {
        AppStoreAPICredentials(bundleID: bundleID, issuerID: apiKey.issuerID, keyID: apiKey.keyID, privateKey: apiKey.privateKey)
    }

    /// A verifier that trusts the simulator's root for Sandbox data.
    static func verifier() throws -> SignedDataVerifier {
        try SignedDataVerifier(configuration: .init(
            apps: [try AppStoreApp(bundleID: bundleID, environments: [.sandbox])], additionalTrustedRoots: [authority.root]))
    }

    static func client(
        _ sim: RunningSimulator, credentials: AppStoreAPICredentials = credentials,
        rateLimits: RateLimitPolicy = RateLimitPolicy(scale: 1000), timeout: Duration = .seconds(10)
    ) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(
            configuration: .init(credentials: [credentials], baseURLOverride: sim.baseURL, requestTimeout: timeout, rateLimits: rateLimits),
            httpClient: HTTPClient.shared, verifier: verifier(), logger: TestServices.logger)
    }

    static let target = AppStoreServerAPIClient.Target(bundleID: bundleID, environment: .sandbox)

    /// Now in whole milliseconds.
    static func now() -> Date { AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: Date())) }

    /// A transaction of a monthly subscription (or another type), Apple-shaped.
    static func transaction(
        original: String, id: String, purchased: Date, type: ProductType = .autoRenewableSubscription,
        token: UUID? = nil, product: String = "com.example.premium.monthly", revoked: Date? = nil
    ) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: original, transactionId: id, webOrderLineItemId: type == .autoRenewableSubscription ? "9\(id)" : nil,
            bundleId: bundleID, productId: product,
            subscriptionGroupIdentifier: type == .autoRenewableSubscription ? "21000000" : nil, purchaseDate: purchased,
            originalPurchaseDate: purchased, expiresDate: type == .autoRenewableSubscription ? purchased.addingTimeInterval(30 * 86_400) : nil,
            quantity: 1, type: type, appAccountToken: token, inAppOwnershipType: .purchased, revocationReason: revoked == nil ? nil : .refundedForOtherReason,
            revocationDate: revoked, environment: .sandbox, storefront: "USA", storefrontId: "143441",
            transactionReason: .purchase, currency: "USD", price: 9990)
    }
}

/// A simulator serving on a loopback port for the length of a test.
final class RunningSimulator: Sendable {
    let apple: SimulatedApple
    let port: Int
    let group: ServiceGroup
    let task: Task<Void, any Error>

    var baseURL: String { "http://127.0.0.1:\(port)" }

    static func start(authority: SigningAuthority = SimFixture.authority) async throws -> RunningSimulator {
        let apple = try SimulatedApple(authority: authority, apiKey: SimFixture.apiKey)
        let port = LocalHTTP.freePort()
        let app = apple.makeApplication(host: "127.0.0.1", port: port, logger: TestServices.logger)
        let group = ServiceGroup(services: [app], logger: TestServices.logger)
        let task = Task { try await group.run() }
        try await LocalHTTP.waitForPort(port, timeout: .seconds(120))
        return RunningSimulator(apple: apple, port: port, group: group, task: task)
    }

    private init(apple: SimulatedApple, port: Int, group: ServiceGroup, task: Task<Void, any Error>) {
        self.apple = apple
        self.port = port
        self.group = group
        self.task = task
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// Calls an admin route with a JSON body; returns the status.
    @discardableResult
    func admin(_ method: HTTPMethodName, _ path: String, json: some Encodable) async throws -> Int {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method.nio
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: Array(try AppStoreJSON.encoder.encode(json))))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    /// GETs an admin route's JSON.
    func adminGet<T: Decodable>(_ path: String, as type: T.Type) async throws -> T {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: baseURL + path), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return try AppStoreJSON.decoder.decode(T.self, from: Data(body.readableBytesView))
    }
}

enum HTTPMethodName {
    case get, post, put, delete
    var nio: NIOHTTP1.HTTPMethod {
        switch self {
        case .get: .GET
        case .post: .POST
        case .put: .PUT
        case .delete: .DELETE
        }
    }
}
