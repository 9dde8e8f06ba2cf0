import AppStore
import AppStoreServerAPI
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import ServiceLifecycle

/// A simulated Apple's signing material and API key, the API client that talks to it, and the
/// Apple-shaped purchases tests seed it with.
public enum SimFixture {
    public static let bundleId = TestPKI.bundleId
    /// The simulator's CA: the root its JWS chain to.
    public static let authority: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Tests Sim"))
    /// Another CA, which nothing trusts.
    public static let forger: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Tests Sim Forger"))
    /// The App Store Connect key the simulator accepts request tokens from.
    public static let apiKey = SimulatorAPIKey(
        issuerID: "6b1f2c3d-1111-4e4e-9a9a-0123456789ab", keyID: "SIMKEY0001", privateKey: P256.Signing.PrivateKey())

    public static var credentials: AppStoreAPICredentials {
        AppStoreAPICredentials(bundleId: bundleId, issuerID: apiKey.issuerID, keyID: apiKey.keyID, privateKey: apiKey.privateKey)
    }

    public static let target = AppStoreServerAPIClient.Target(bundleId: bundleId, environment: .sandbox)

    /// A verifier that trusts the simulator's root for Sandbox data.
    public static func verifier() throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                apps: [try AppStoreApp(bundleId: bundleId, environments: [.sandbox])], additionalTrustedRoots: [authority.root]))
    }

    /// An API client for the simulator at `baseURL`, verifying what it returns with ``verifier()``.
    /// Its default timeout is long: on a loaded CI machine the in-process simulator has taken over
    /// 15 s to answer, and a test that is not about timeouts must not see one.
    public static func client(
        baseURL: String, credentials: AppStoreAPICredentials = credentials, rateLimits: RateLimitPolicy = RateLimitPolicy(scale: 1000),
        timeout: Duration = .seconds(60)
    ) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(
            configuration: .init(credentials: [credentials], baseURLOverride: baseURL, requestTimeout: timeout, rateLimits: rateLimits),
            httpClient: LocalHTTP.client, verifier: verifier(), logger: TestServices.logger)
    }

    /// An API client for `sim`.
    public static func client(
        _ sim: RunningSimulator, credentials: AppStoreAPICredentials = credentials,
        rateLimits: RateLimitPolicy = RateLimitPolicy(scale: 1000), timeout: Duration = .seconds(60)
    ) throws -> AppStoreServerAPIClient {
        try client(baseURL: sim.baseURL, credentials: credentials, rateLimits: rateLimits, timeout: timeout)
    }

    /// Now in whole milliseconds.
    public static func now() -> Date { TestPKI.now() }

    /// A purchase as the simulator stores it (it signs, so no `signedDate`): a monthly subscription
    /// by default, or another product type; `purchased` is kept in whole milliseconds, as Apple's dates are.
    public static func transaction(
        original: String, id: String, purchased: Date, type: ProductType = .autoRenewableSubscription, token: UUID? = nil,
        product: String = TestPKI.productID, subscriptionGroup: String? = "21000000", revoked: Date? = nil, price: Int64 = 9990,
        bundleId: String = bundleId
    ) -> JWSTransactionDecodedPayload {
        let purchased = AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: purchased))
        let subscription = type == .autoRenewableSubscription
        return JWSTransactionDecodedPayload(
            originalTransactionId: original, transactionId: id, webOrderLineItemId: subscription ? "9\(id)" : nil,
            bundleId: bundleId, productId: product, subscriptionGroupIdentifier: subscription ? subscriptionGroup : nil,
            purchaseDate: purchased, originalPurchaseDate: purchased,
            expiresDate: subscription ? purchased.addingTimeInterval(30 * 86_400) : nil, quantity: 1, type: type,
            appAccountToken: token, inAppOwnershipType: .purchased, revocationReason: revoked == nil ? nil : .refundedForOtherReason,
            revocationDate: revoked, environment: .sandbox, storefront: "USA", storefrontId: "143441", transactionReason: .purchase,
            currency: "USD", price: price)
    }

    /// Writes the API key's private key as a `.p8` file in the temporary directory; returns its path.
    public static func writeAPIKey() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("k-\(UUID().uuidString.prefix(6)).p8").path
        try Data(apiKey.privateKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// A simulated Apple serving on a loopback port for the length of a test, with an API client for it.
public final class RunningSimulator: Sendable {
    public let apple: SimulatedApple
    public let port: Int
    /// An API client with the fixture's defaults (``SimFixture/client(_:credentials:rateLimits:timeout:)`` for others).
    public let client: AppStoreServerAPIClient
    let group: ServiceGroup
    let task: Task<Void, any Error>

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Without a `port` the simulator binds port 0 and reports the port the kernel gave it: a port
    /// picked first and bound later can be taken meanwhile by another test process (or an outgoing
    /// connection), and a test then talked to another test's simulator.
    public static func start(authority: SigningAuthority = SimFixture.authority, port: Int? = nil) async throws -> RunningSimulator {
        let apple = try SimulatedApple(authority: authority, apiKey: SimFixture.apiKey)
        let (bound, boundSink) = AsyncStream.makeStream(of: Int.self)
        let app = apple.makeApplication(host: "127.0.0.1", port: port ?? 0, logger: TestServices.logger) { port in
            boundSink.yield(port)
            boundSink.finish()
        }
        let group = ServiceGroup(services: [app], logger: TestServices.logger)
        let task = Task {
            defer { boundSink.finish() }
            try await group.run()
        }
        guard let port = await bound.first(where: { _ in true }) else {
            try await task.value  // the server's own error (a port in use) ends the test
            throw TestSupportError("the simulator stopped before it listened")
        }
        let client = try SimFixture.client(baseURL: "http://127.0.0.1:\(port)")
        return RunningSimulator(apple: apple, port: port, client: client, group: group, task: task)
    }

    /// A simulator with a CA of its own whose intermediate and leaf name this simulator's OCSP
    /// responder (`http://127.0.0.1:<port>/ocsp`): the port is picked first so the certificates can name it.
    public static func startWithOCSP(name: String = "Tests Sim OCSP") async throws -> RunningSimulator {
        let port = LocalHTTP.freePort()
        let authority = try SigningAuthority(options: SigningAuthorityOptions(name: name, ocspBaseURL: "http://127.0.0.1:\(port)/ocsp"))
        return try await start(authority: authority, port: port)
    }

    private init(apple: SimulatedApple, port: Int, client: AppStoreServerAPIClient, group: ServiceGroup, task: Task<Void, any Error>) {
        self.apple = apple
        self.port = port
        self.client = client
        self.group = group
        self.task = task
    }

    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// Runs `body` with a running simulator, stopped afterwards whatever happens.
    public static func with<T: Sendable>(
        authority: SigningAuthority = SimFixture.authority, _ body: @Sendable (RunningSimulator) async throws -> T
    ) async throws -> T {
        let sim = try await start(authority: authority)
        return try await withCleanup {
            try await body(sim)
        } cleanup: {
            await sim.stop()
        }
    }
}
