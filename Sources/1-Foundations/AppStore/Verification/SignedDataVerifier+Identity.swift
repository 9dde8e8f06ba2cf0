import Crypto
import Foundation
import Synchronization
import X509

/// The app and environment a notification names, from its one sub-object.
struct NotificationIdentity {
    var bundleId: String?
    var appAppleId: Int64?
    var environment: AppStoreEnvironment?

    /// Apple's order: `data`, then `summary`, then `externalPurchaseToken`, then `appData`.
    init(_ payload: ResponseBodyV2DecodedPayload) {
        if let data = payload.data {
            self.init(bundleId: data.bundleId, appAppleId: data.appAppleId, environment: data.environment)
        } else if let summary = payload.summary {
            self.init(bundleId: summary.bundleId, appAppleId: summary.appAppleId, environment: summary.environment)
        } else if let token = payload.externalPurchaseToken {
            self.init(bundleId: token.bundleId, appAppleId: token.appAppleId, environment: token.derivedEnvironment)
        } else if let appData = payload.appData {
            self.init(bundleId: appData.bundleId, appAppleId: appData.appAppleId, environment: appData.environment)
        } else {
            self.init(bundleId: nil, appAppleId: nil, environment: nil)
        }
    }

    init(bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }
}

extension SignedDataVerifier {
    /// The configured app a payload belongs to, after checking bundle ID, environment, app Apple ID
    /// (Production only, like Apple's libraries) and that Production data chains to Apple's root.
    func resolveApp(
        bundleId: String?,
        environment: AppStoreEnvironment?,
        appAppleId: Int64?,
        checksAppAppleId: Bool,
        chain: ChainCache.Entry
    ) throws(AppStoreVerificationError) -> AppStoreApp {
        guard let bundleId else {
            throw AppStoreVerificationError(.wrongBundleId, "the payload names no bundle ID")
        }
        guard let app = appsByBundleId[bundleId] else {
            throw AppStoreVerificationError(.wrongBundleId, "bundle ID \(bundleId.prefix(200)) is not configured")
        }
        try checkEnvironment(environment, allowed: app.environments, chain: nil)
        if checksAppAppleId, environment == .production, appAppleId != app.appAppleId {
            let found = appAppleId.map(String.init) ?? "none"
            let expected = app.appAppleId.map(String.init) ?? "none"
            throw AppStoreVerificationError(
                .wrongAppAppleId,
                "app Apple ID \(found) is not the configured \(expected) of \(bundleId)"
            )
        }
        try requireAppleRoot(forProduction: environment, chain: chain)
        return app
    }

    /// Checks the environment is present and allowed and, given the chain, that Production data
    /// chains to Apple's root.
    func checkEnvironment(
        _ environment: AppStoreEnvironment?,
        allowed: Set<AppStoreEnvironment>,
        chain: ChainCache.Entry?
    ) throws(AppStoreVerificationError) {
        try checkEnvironment(environment, isAllowed: { allowed.contains($0) }, chain: chain)
    }

    /// ``checkEnvironment(_:allowed:chain:)`` with exactly one allowed environment (a nested JWS must
    /// name its notification's), without building a set per JWS.
    func checkEnvironment(
        _ environment: AppStoreEnvironment?,
        equalTo expected: AppStoreEnvironment,
        chain: ChainCache.Entry?
    ) throws(AppStoreVerificationError) {
        try checkEnvironment(environment, isAllowed: { $0 == expected }, chain: chain)
    }

    private func checkEnvironment(
        _ environment: AppStoreEnvironment?,
        isAllowed: (AppStoreEnvironment) -> Bool,
        chain: ChainCache.Entry?
    ) throws(AppStoreVerificationError) {
        guard let environment else {
            throw AppStoreVerificationError(.wrongEnvironment, "the payload names no environment")
        }
        guard isAllowed(environment) else {
            throw AppStoreVerificationError(
                .wrongEnvironment,
                "environment \(environment.rawValue.prefix(64)) is not configured for this app"
            )
        }
        if let chain {
            try requireAppleRoot(forProduction: environment, chain: chain)
        }
    }

    /// Production data is trusted only when it chains to Apple Root CA - G3, whatever else is
    /// configured; StoreKit Testing in Xcode's certificate vouches only for `Xcode` data.
    func requireAppleRoot(
        forProduction environment: AppStoreEnvironment?, chain: ChainCache.Entry
    )
        throws(AppStoreVerificationError)
    {
        if chain.chain.isXcodeTesting, environment != .xcode {
            throw AppStoreVerificationError(
                .untrustedRoot,
                "StoreKit Testing in Xcode's certificate signs only Xcode data, not \(environment?.rawValue.prefix(64) ?? "data without an environment")"
            )
        }
        if environment == .production, !chain.chain.isAnchoredInAppleRoot {
            throw AppStoreVerificationError(
                .untrustedRoot,
                "Production data must chain to Apple Root CA - G3, not to \(chain.chain.root.subject)"
            )
        }
    }

    /// A nested JWS must name the same app and environment as its notification.
    func requireSame(
        bundleId: String?,
        environment: AppStoreEnvironment?,
        as app: AppStoreApp,
        _ expectedEnvironment: AppStoreEnvironment?
    ) throws(AppStoreVerificationError) {
        guard bundleId == app.bundleId else {
            throw AppStoreVerificationError(
                .wrongBundleId,
                "the bundle ID differs from the notification's \(app.bundleId)"
            )
        }
        if let expectedEnvironment, environment != expectedEnvironment {
            throw AppStoreVerificationError(
                .wrongEnvironment,
                "the environment differs from the notification's \(expectedEnvironment.rawValue)"
            )
        }
    }

    /// The cached chain for the token's exact header, if young enough.
    func cachedChain(for jws: CompactJWS, now: Date) -> ChainCache.Entry? {
        guard configuration.chainCache.isEnabled else { return nil }
        return jws.withHeaderBytes { header in cache.withLock { $0.lookup(header, now: now) } }
    }

    /// Remembers a freshly validated chain under the token's exact header (when caching is on).
    /// - Returns: The chain's entry, cached or not.
    func storeChain(
        _ chain: ValidatedChain,
        leafKey: P256.Signing.PublicKey,
        for jws: CompactJWS,
        now: Date
    ) -> ChainCache.Entry {
        let enabled = configuration.chainCache.isEnabled
        let entry = ChainCache.Entry(
            chain: chain, leafKey: leafKey, validity: chain.validityInterval, insertedAt: now,
            signingInputPrefix: enabled ? jws.signingInputPrefix() : SHA256())
        guard enabled else { return entry }
        let header = jws.headerBytes
        cache.withLock { $0.insert(header, entry: entry, now: now) }
        return entry
    }
}
