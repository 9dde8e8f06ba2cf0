import Foundation
import Synchronization
import X509

/// Verifies App Store signed data (notifications, transactions, renewal info, app transactions) and
/// decodes it into typed models.
///
/// Each compact JWS must be ES256 with exactly three `x5c` certificates; leaf → intermediate must
/// chain to a configured root (the token's own third certificate is never trusted), carry Apple's
/// marker extensions and be valid at the validation time; the signature must match the leaf's P-256
/// key; and bundle ID, environment and (in Production) app Apple ID must match a configured app.
/// Production data must chain to Apple Root CA - G3. A notification's nested JWS are verified with
/// the same rules and must name the same app and environment.
///
/// StoreKit Testing in Xcode signs with one self-signed certificate, which Apple's libraries then
/// do not check at all. Only a deployment with an app configured for `Xcode` (and none for
/// Production) accepts such a token, only for that app and only when it says `Xcode`; its
/// signature must still match its certificate's key.
///
/// Verified chains are cached by exact header bytes, so a warm verifier checks only one signature per
/// JWS; with ``VerifiedTokenCachePolicy`` on, a token seen before (byte for byte) is not verified
/// again, while the validation time and identity rules still apply. The verifier is `Sendable`;
/// share one instance across tasks.
public final class SignedDataVerifier: Sendable {
    let configuration: Configuration
    let appsByBundleId: [String: AppStoreApp]

    /// Whether signed data of `bundleId` in `environment` can pass (the app is configured for it).
    public func accepts(_ bundleId: String, in environment: AppStoreEnvironment) -> Bool {
        appsByBundleId[bundleId]?.environments.contains(environment) ?? false
    }
    let allEnvironments: Set<AppStoreEnvironment>
    let validator: AppStoreChainValidator
    let cache: Mutex<ChainCache>
    /// Seconds a cached chain is trusted before it is validated again (the revocation lifetime with online checks).
    let chainMaximumAge: Double
    /// Whole verified tokens, used when ``usesTokenCache``.
    let tokenCache: Mutex<VerifiedTokenCache>
    /// Whether ``VerifiedTokenCachePolicy`` is on (honoured only with the chain cache on).
    let usesTokenCache: Bool
    /// Whether online revocation checks are configured (read per JWS).
    let checksRevocation: Bool
    /// Whether an app accepts StoreKit Testing in Xcode data (see ``verifySignedData(_:as:expecting:signedDate:)``).
    let acceptsXcode: Bool

    /// - Throws: ``AppStoreConfigurationError`` when no app is configured, a bundle ID appears twice,
    ///   no root is trusted, or the input limit is not positive.
    public init(configuration: Configuration) throws(AppStoreConfigurationError) {
        guard !configuration.apps.isEmpty else {
            throw AppStoreConfigurationError("the verifier needs at least one app")
        }
        var apps: [String: AppStoreApp] = [:]
        for app in configuration.apps {
            guard apps[app.bundleId] == nil else {
                throw AppStoreConfigurationError("bundle ID \(app.bundleId) is configured twice")
            }
            apps[app.bundleId] = app
        }
        if let xcode = configuration.apps.first(where: { $0.environments.contains(.xcode) }),
            let production = configuration.apps.first(where: { $0.environments.contains(.production) })
        {
            throw AppStoreConfigurationError(
                "app \(xcode.bundleId) accepts Xcode (unsigned test data), which only a test deployment may; "
                    + "this one accepts Production for \(production.bundleId)")
        }
        guard configuration.trustsAppleRootCAG3 || !configuration.additionalTrustedRoots.isEmpty else {
            throw AppStoreConfigurationError("the verifier trusts no root certificate")
        }
        if configuration.trustsAppleRootCAG3, AppleRootCertificates.appleRootCAG3 == nil {
            throw AppStoreConfigurationError("the embedded Apple Root CA - G3 does not parse")
        }
        guard configuration.maximumInputSize > 0 else {
            throw AppStoreConfigurationError("maximumInputSize must be positive")
        }
        self.configuration = configuration
        self.checksRevocation = configuration.revocationChecking != nil
        self.appsByBundleId = apps
        self.allEnvironments = configuration.apps.reduce(into: []) { $0.formUnion($1.environments) }
        self.acceptsXcode = allEnvironments.contains(.xcode)
        self.validator = AppStoreChainValidator(
            trustedRoots: configuration.additionalTrustedRoots,
            trustAppleRoot: configuration.trustsAppleRootCAG3,
            revocation: configuration.revocationChecking
        )
        var maximumAge = configuration.chainCache.maximumAge
        if let revocation = configuration.revocationChecking {
            maximumAge = min(maximumAge, revocation.cacheLifetime)
        }
        self.cache = Mutex(
            ChainCache(maximumEntries: configuration.chainCache.maximumEntries, maximumAge: maximumAge)
        )
        self.chainMaximumAge = maximumAge
        self.usesTokenCache = configuration.verifiedTokenCache.isEnabled && configuration.chainCache.isEnabled
        self.tokenCache = Mutex(VerifiedTokenCache(maximumEntries: configuration.verifiedTokenCache.maximumEntries))
    }

    // MARK: - Public API

    /// Verifies a notification's `signedPayload` and every JWS nested in it.
    /// - Returns: The decoded notification with its verified transaction, renewal info or app transaction.
    /// - Throws: ``AppStoreVerificationError``; a nested failure carries the nested field's name in its message.
    public func verifyNotification(
        signedPayload: String
    ) async throws(AppStoreVerificationError)
        -> VerifiedNotification
    {
        let outer = try await verifySignedData(signedPayload, as: ResponseBodyV2DecodedPayload.self) { $0.signedDate }
        let payload = outer.payload
        guard payload.notificationType != nil || payload.notificationUUID != nil else {
            throw AppStoreVerificationError(.unexpectedKind, "the payload is not a notification")
        }
        let identity = NotificationIdentity(payload)
        let app = try resolveApp(
            bundleId: identity.bundleId,
            environment: identity.environment,
            appAppleId: identity.appAppleId,
            checksAppAppleId: true,
            chain: outer.chain
        )
        // resolveApp has checked that the environment is present.
        let environment = identity.environment ?? .unknown("")
        var result = VerifiedNotification(
            payload: payload,
            environment: environment,
            bundleId: app.bundleId,
            appAppleId: app.appAppleId
        )
        if let signed = payload.data?.signedTransactionInfo {
            result.transaction = try await nested("data.signedTransactionInfo") {
                () async throws(AppStoreVerificationError) in
                try await self.verifyTransaction(signed, app: app, environment: environment, checksKind: false)
            }
        }
        if let signed = payload.data?.signedRenewalInfo {
            result.renewalInfo = try await nested("data.signedRenewalInfo") {
                () async throws(AppStoreVerificationError) in
                try await self.verifyRenewalInfo(signed, environment: environment)
            }
        }
        if let signed = payload.appData?.signedAppTransactionInfo {
            result.appTransaction = try await nested("appData.signedAppTransactionInfo") {
                () async throws(AppStoreVerificationError) in
                try await self.verifyAppTransaction(signed, app: app, environment: environment, checksKind: false)
            }
        }
        return result
    }

    /// Verifies a signed transaction (from a notification, the App Store Server API or an app upload).
    /// - Throws: ``AppStoreVerificationError``.
    public func verifyTransaction(
        _ signedTransaction: String
    ) async throws(AppStoreVerificationError)
        -> JWSTransactionDecodedPayload
    {
        try await verifyTransaction(signedTransaction, app: nil, environment: nil, checksKind: true)
    }

    /// Verifies signed renewal info.
    ///
    /// Renewal info names no app, so its environment is checked against `bundleId`'s configured
    /// environments when given, otherwise against every configured environment.
    /// - Throws: ``AppStoreVerificationError``.
    public func verifyRenewalInfo(
        _ signedRenewalInfo: String,
        bundleId: String? = nil
    ) async throws(AppStoreVerificationError) -> JWSRenewalInfoDecodedPayload {
        var environments = allEnvironments
        if let bundleId {
            guard let app = appsByBundleId[bundleId] else {
                throw AppStoreVerificationError(.wrongBundleId, "bundle ID \(bundleId) is not configured")
            }
            environments = app.environments
        }
        return try await verifyRenewalInfo(signedRenewalInfo, environments: environments, checksKind: true)
    }

    /// Verifies a signed app transaction; its environment is its `receiptType`.
    /// - Throws: ``AppStoreVerificationError``.
    public func verifyAppTransaction(
        _ signedAppTransaction: String
    ) async throws(AppStoreVerificationError)
        -> AppTransaction
    {
        try await verifyAppTransaction(signedAppTransaction, app: nil, environment: nil, checksKind: true)
    }

    /// Detects the kind of `signedData` from its payload, then verifies it as that kind.
    /// - Throws: ``AppStoreVerificationError``; `malformed` when the kind cannot be told.
    public func verify(_ signedData: String) async throws(AppStoreVerificationError) -> VerifiedSignedData {
        switch try Self.detectKind(of: signedData, maximumSize: configuration.maximumInputSize) {
        case .notification:
            return .notification(try await verifyNotification(signedPayload: signedData))
        case .transaction:
            return .transaction(try await verifyTransaction(signedData))
        case .renewalInfo:
            return .renewalInfo(try await verifyRenewalInfo(signedData))
        case .appTransaction:
            return .appTransaction(try await verifyAppTransaction(signedData))
        }
    }

    /// The kind of signed data a compact JWS claims to be, from its payload's keys, without verifying it.
    /// - Throws: ``AppStoreVerificationError`` `malformed` when it is no JWS, its payload is no JSON
    ///   object, or the keys fit no kind.
    public static func detectKind(
        of signedData: String, maximumSize: Int = 1 << 20
    ) throws(AppStoreVerificationError)
        -> SignedDataKind
    {
        let jws = try CompactJWS(signedData, maximumSize: maximumSize)
        let keys = try payloadKeys(of: jws)
        guard let kind = SignedDataKind.detect(keys: keys) else {
            throw AppStoreVerificationError(.malformed, "the payload is not a known kind of App Store signed data")
        }
        return kind
    }

    /// Counters of the chain cache.
    public var cacheStatistics: ChainCacheStatistics {
        cache.withLock { $0.statistics }
    }

    /// Counters of the verified-token cache (all zero when it is off).
    public var tokenCacheStatistics: VerifiedTokenCacheStatistics {
        tokenCache.withLock { $0.statistics }
    }

    /// Forgets every cached chain and verified token (for example after changing trust out of band).
    public func removeCachedChains() {
        cache.withLock { $0.removeAll() }
        tokenCache.withLock { $0.removeAll() }
    }

    // MARK: - Kind-specific verification

    private func verifyTransaction(
        _ token: String,
        app expectedApp: AppStoreApp?,
        environment expectedEnvironment: AppStoreEnvironment?,
        checksKind: Bool
    ) async throws(AppStoreVerificationError) -> JWSTransactionDecodedPayload {
        let verified = try await verifySignedData(
            token,
            as: JWSTransactionDecodedPayload.self,
            expecting: checksKind ? .transaction : nil
        ) {
            $0.signedDate
        }
        let payload = verified.payload
        if let expectedApp {
            try requireSame(
                bundleId: payload.bundleId,
                environment: payload.environment,
                as: expectedApp,
                expectedEnvironment
            )
        }
        _ = try resolveApp(
            bundleId: payload.bundleId,
            environment: payload.environment,
            appAppleId: nil,
            checksAppAppleId: false,
            chain: verified.chain
        )
        return payload
    }

    private func verifyRenewalInfo(
        _ token: String,
        environments: Set<AppStoreEnvironment>,
        checksKind: Bool
    ) async throws(AppStoreVerificationError) -> JWSRenewalInfoDecodedPayload {
        let verified = try await verifySignedData(
            token,
            as: JWSRenewalInfoDecodedPayload.self,
            expecting: checksKind ? .renewalInfo : nil
        ) {
            $0.signedDate
        }
        try checkEnvironment(verified.payload.environment, allowed: environments, chain: verified.chain)
        return verified.payload
    }

    /// Verifies renewal info nested in a notification: its environment must be the notification's.
    private func verifyRenewalInfo(
        _ token: String,
        environment: AppStoreEnvironment
    ) async throws(AppStoreVerificationError) -> JWSRenewalInfoDecodedPayload {
        let verified = try await verifySignedData(token, as: JWSRenewalInfoDecodedPayload.self) { $0.signedDate }
        try checkEnvironment(verified.payload.environment, equalTo: environment, chain: verified.chain)
        return verified.payload
    }

    private func verifyAppTransaction(
        _ token: String,
        app expectedApp: AppStoreApp?,
        environment expectedEnvironment: AppStoreEnvironment?,
        checksKind: Bool
    ) async throws(AppStoreVerificationError) -> AppTransaction {
        let verified = try await verifySignedData(
            token,
            as: AppTransaction.self,
            expecting: checksKind ? .appTransaction : nil
        ) {
            $0.receiptCreationDate
        }
        let payload = verified.payload
        if let expectedApp {
            try requireSame(
                bundleId: payload.bundleId,
                environment: payload.receiptType,
                as: expectedApp,
                expectedEnvironment
            )
        }
        _ = try resolveApp(
            bundleId: payload.bundleId,
            environment: payload.receiptType,
            appAppleId: payload.appAppleId,
            checksAppAppleId: true,
            chain: verified.chain
        )
        return payload
    }

    /// Runs a nested verification and names the nested field in its error.
    private func nested<T>(
        _ field: String,
        _ body: () async throws(AppStoreVerificationError) -> T
    ) async throws(AppStoreVerificationError) -> T {
        do {
            return try await body()
        } catch {
            throw AppStoreVerificationError(error.code, "\(field): \(error.message)")
        }
    }
}
