import AppStore
import AppStoreSigning
import Foundation
import Hummingbird
import Logging
import NIOCore
import SwiftASN1
import X509

/// A simulated Apple: the App Store Server API over an in-memory model, for tests and local runs.
///
/// On first start it creates, in its state directory, a signing CA shaped like Apple's
/// (``SigningAuthority``: P-384 root and intermediate, P-256 leaf, marker extensions) and an App
/// Store Connect key (``SimulatorAPIKey``), and reuses both afterwards, so the pipeline can be
/// configured once to trust the root (`GET /sim/ca/root.pem`; honoured for Sandbox data only) and
/// to sign tokens with the key. Every answer is Sandbox data. It never runs in production.
///
/// Its intermediate and leaf name the simulator's own OCSP responder (``SimulatedOCSP``, served at
/// `<ocspBaseURL>/root` and `<ocspBaseURL>/intermediate`), so a verifier with revocation checks on
/// can be pointed at it; a stored CA whose URL differs is re-issued below the same root on start.
public struct SimulatedApple: Sendable {
    /// The signing CA; its root is what the pipeline must trust.
    public let authority: SigningAuthority
    /// The App Store Connect key tokens must be signed with.
    public let apiKey: SimulatorAPIKey
    /// The data.
    public let store: SimulatorStore
    /// Fault injection and counters.
    public let faults: FaultInjector
    /// The OCSP responder's revocations, faults and counters.
    public let ocsp: SimulatedOCSP
    let signing: SimulatorSigning

    /// Loads or creates the CA (in `<stateDirectory>/ca`) and, unless `apiKey` is given, the key (in
    /// `stateDirectory`).
    /// - Parameter ocspBaseURL: Where verifiers reach this simulator's OCSP responder, e.g.
    ///   `http://127.0.0.1:8090/ocsp`; `nil`: a new CA names none, a stored one is used as it is.
    public init(
        stateDirectory: URL, apiKey: SimulatorAPIKey? = nil, appAppleIds: [String: Int64] = [:], ocspBaseURL: String? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        let authority = try SigningAuthority.loadOrCreate(
            at: stateDirectory.appendingPathComponent("ca"),
            options: SigningAuthorityOptions(name: "Simulated App Store", ocspBaseURL: ocspBaseURL))
        try self.init(
            authority: authority, apiKey: try apiKey ?? SimulatorAPIKey.loadOrCreate(at: stateDirectory), appAppleIds: appAppleIds,
            clock: clock)
    }

    /// A simulator with the given CA and key (tests build both in memory).
    public init(
        authority: SigningAuthority, apiKey: SimulatorAPIKey, appAppleIds: [String: Int64] = [:],
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.authority = authority
        self.apiKey = apiKey
        store = SimulatorStore(appAppleIds: appAppleIds, clock: clock)
        faults = FaultInjector(clock: { Date() })
        ocsp = SimulatedOCSP(authority: authority)
        signing = SimulatorSigning(signer: try authority.makeSigner(), store: store)
    }

    /// Records notifications for Get Notification History from the current data.
    public var notifications: SimulatorNotifications { SimulatorNotifications(store: store, signing: signing) }

    /// A stored transaction as the app receives it from StoreKit (for app uploads), signed at
    /// `signedAt` (the simulator's now when nil).
    public func signedTransaction(_ transactionId: String, bundleId: String, signedAt: Date? = nil) throws -> String {
        guard let stored = store.transaction(anyID: transactionId, bundleId: bundleId) else {
            throw SimulatorInputError("transaction \(transactionId) of \(bundleId) is not stored")
        }
        return try signing.sign(stored.payload, signedAt: signedAt ?? store.now())
    }

    /// The router with every `/inApps` and `/sim` route.
    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        SimulatorAPIRoutes(
            store: store, signing: signing, faults: faults,
            tokens: BearerTokenValidator(key: apiKey, clock: { Date() })
        ).register(on: router)
        SimulatorAdminRoutes(
            store: store, signing: signing, faults: faults, rootPEM: (try? authority.root.serializeAsPEM().pemString) ?? "",
            apiKey: apiKey, ocsp: ocsp
        ).register(on: router)
        SimulatorOCSPRoutes(ocsp: ocsp).register(on: router)
        router.get("/health") { _, _ in Response(status: .ok) }
        return router
    }

    /// The HTTP application on `host:port` (port 0 picks a free one); `onRunning` gets the bound port.
    public func makeApplication(
        host: String = "127.0.0.1", port: Int = 8090, logger: Logger, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: makeRouter(), configuration: .init(address: .hostname(host, port: port), serverName: "appstore-sim"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) }, logger: logger)
    }
}
