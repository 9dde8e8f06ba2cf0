import AppStore
import AppStoreServerAPI
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import Foundation
import KafkaClient
import ServiceLifecycle
import TestSupport

/// A simulated Apple on a loopback port and an API client trusting its root, for the recovery jobs' tests.
final class RecoverySimulator: Sendable {
    static let bundleID = "com.example.entitlements"
    static let authority: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Recovery Tests Sim"))
    static let apiKey = SimulatorAPIKey(issuerID: "7c2e3d4f-2222-4f4f-8b8b-0123456789ab", keyID: "SIMKEY0002", privateKey: P256.Signing.PrivateKey())
    static let target = AppStoreServerAPIClient.Target(bundleID: bundleID, environment: .sandbox)

    let apple: SimulatedApple
    let port: Int
    let group: ServiceGroup
    let task: Task<Void, any Error>
    let client: AppStoreServerAPIClient

    var baseURL: String { "http://127.0.0.1:\(port)" }

    static func start() async throws -> RecoverySimulator {
        let apple = try SimulatedApple(authority: authority, apiKey: apiKey)
        let port = LocalHTTP.freePort()
        let group = ServiceGroup(
            services: [apple.makeApplication(host: "127.0.0.1", port: port, logger: TestServices.logger)], logger: TestServices.logger)
        let task = Task { try await group.run() }
        try await LocalHTTP.waitForPort(port, timeout: .seconds(120))
        let verifier = try SignedDataVerifier(configuration: .init(
            apps: [try AppStoreApp(bundleID: bundleID, environments: [.sandbox])], additionalTrustedRoots: [authority.root]))
        let credentials = AppStoreAPICredentials(bundleID: bundleID, issuerID: apiKey.issuerID, keyID: apiKey.keyID, privateKey: apiKey.privateKey)
        let client = try AppStoreServerAPIClient(
            configuration: .init(credentials: [credentials], baseURLOverride: "http://127.0.0.1:\(port)", requestTimeout: .seconds(10),
                                 rateLimits: RateLimitPolicy(scale: 1000)),
            httpClient: HTTPClient.shared, verifier: verifier, logger: TestServices.logger)
        return RecoverySimulator(apple: apple, port: port, group: group, task: task, client: client)
    }

    private init(apple: SimulatedApple, port: Int, group: ServiceGroup, task: Task<Void, any Error>, client: AppStoreServerAPIClient) {
        self.apple = apple
        self.port = port
        self.group = group
        self.task = task
        self.client = client
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// Runs `body` with a running simulator, stopped afterwards.
    static func with<T: Sendable>(_ body: @Sendable (RecoverySimulator) async throws -> T) async throws -> T {
        let sim = try await start()
        do {
            let result = try await body(sim)
            await sim.stop()
            return result
        } catch {
            await sim.stop()
            throw error
        }
    }

    /// A monthly subscription transaction (or another product type), Apple-shaped, in whole milliseconds.
    static func transaction(
        original: String, id: String, purchased: Date, token: UUID? = nil, product: String = "com.example.premium.monthly",
        type: ProductType = .autoRenewableSubscription
    ) -> JWSTransactionDecodedPayload {
        let purchased = AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: purchased))
        return JWSTransactionDecodedPayload(
            originalTransactionId: original, transactionId: id, webOrderLineItemId: type == .autoRenewableSubscription ? "9\(id)" : nil,
            bundleId: bundleID, productId: product,
            subscriptionGroupIdentifier: type == .autoRenewableSubscription ? "21000000" : nil, purchaseDate: purchased,
            originalPurchaseDate: purchased, expiresDate: type == .autoRenewableSubscription ? purchased.addingTimeInterval(30 * 86_400) : nil,
            quantity: 1, type: type, appAccountToken: token, inAppOwnershipType: .purchased, environment: .sandbox, storefront: "USA",
            storefrontId: "143441", transactionReason: .purchase, currency: "USD", price: 9990)
    }

    /// A producer for the tests' own topics.
    static func producer() throws -> KafkaProducer {
        try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: TestServices.logger)
    }
}
