import AppStore
import AppStoreServerAPI
import AppStoreSigning
import AppStoreSimulator
import Crypto
import EnrichService
import EnvironmentSettings
import Foundation
import StageRuntime
import TestSupport
import Testing

/// The API client's verifier remembers JWS it verified (issue 15.3): a token seen again byte for byte
/// is not verified again, yet every rule that depends on the moment or on the caller still applies.
@Suite("verified-JWS cache")
struct VerifiedJWSCacheTests {
    static let start = SimFixture.now()

    static func verifier(
        clock: TestClock, authority: SigningAuthority = SimFixture.authority, validationTime: SignedDataVerifier.ValidationTime = .signedDate,
        chainCache: ChainCachePolicy = .default, entries: Int = 64, extraApps: [AppStoreApp] = []
    ) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                apps: [try AppStoreApp(bundleId: SimFixture.bundleId, environments: [.sandbox])] + extraApps,
                additionalTrustedRoots: [authority.root], validationTime: validationTime, chainCache: chainCache,
                verifiedTokenCache: VerifiedTokenCachePolicy(maximumEntries: entries), clock: { clock.now }))
    }

    static func signedTransaction(_ id: String = "5000000000000001", authority: SigningAuthority = SimFixture.authority) throws -> String {
        var transaction = SimFixture.transaction(original: id, id: id, purchased: start.addingTimeInterval(-86_400))
        transaction.signedDate = start
        return try authority.makeSigner().sign(transaction)
    }

    /// Full verifications so far: each one (and only one) passes through the chain cache.
    static func fullVerifications(_ verifier: SignedDataVerifier) -> Int {
        verifier.cacheStatistics.hits + verifier.cacheStatistics.misses
    }

    @Test("a token verified before is not verified again: same payload, no signature check, no chain lookup")
    func hitIsNotVerifiedAgain() async throws {
        let clock = TestClock(Self.start)
        let verifier = try Self.verifier(clock: clock)
        let token = try Self.signedTransaction()
        let first = try await verifier.verifyTransaction(token)
        #expect(Self.fullVerifications(verifier) == 1)
        for _ in 0..<5 {
            let again = try await verifier.verifyTransaction(token)
            #expect(again == first)
        }
        #expect(Self.fullVerifications(verifier) == 1, "five hits, no verification")
        #expect(verifier.tokenCacheStatistics.hits == 5)
        #expect(verifier.tokenCacheStatistics.misses == 1)
        #expect(verifier.tokenCacheStatistics.entries == 1)
    }

    @Test("a token differing in one byte is not a hit, and is judged on its own")
    func oneByteDiffers() async throws {
        let clock = TestClock(Self.start)
        let verifier = try Self.verifier(clock: clock)
        let token = try Self.signedTransaction()
        _ = try await verifier.verifyTransaction(token)
        // One byte of each segment in turn: header, payload, signature.
        var bytes = Array(token.utf8)
        let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
        for position in [dots[0] / 2, (dots[0] + dots[1]) / 2, (dots[1] + bytes.count) / 2] {
            let original = bytes[position]
            bytes[position] = original == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let tampered = String(decoding: bytes, as: UTF8.self)
            bytes[position] = original
            let before = verifier.tokenCacheStatistics
            await #expect(throws: AppStoreVerificationError.self) { _ = try await verifier.verifyTransaction(tampered) }
            #expect(verifier.tokenCacheStatistics.hits == before.hits, "byte \(position) differs: not a hit")
            #expect(verifier.tokenCacheStatistics.misses == before.misses + 1)
        }
        // The untouched token is still a hit.
        _ = try await verifier.verifyTransaction(token)
        #expect(verifier.tokenCacheStatistics.hits == 1)
    }

    @Test("a hit whose chain has expired at the new validation time is refused exactly like a first check")
    func expiredChainIsRefused() async throws {
        var options = SigningAuthorityOptions(name: "Short-lived leaf", now: Self.start)
        options.leafValidity = Self.start.addingTimeInterval(-3600)...Self.start.addingTimeInterval(3600)
        let authority = try SigningAuthority(options: options)
        let clock = TestClock(Self.start)
        // Validation at the current time, and chains trusted for as long as they are valid, so only
        // the validity window can refuse the second check.
        let policy = ChainCachePolicy(maximumAge: 1e9)
        let verifier = try Self.verifier(clock: clock, authority: authority, validationTime: .currentTime, chainCache: policy)
        let token = try Self.signedTransaction(authority: authority)
        _ = try await verifier.verifyTransaction(token)
        _ = try await verifier.verifyTransaction(token)
        #expect(verifier.tokenCacheStatistics.hits == 1, "valid now: a hit")

        clock.advance(by: 2 * 3600)
        let cached = await #expect(throws: AppStoreVerificationError.self) { _ = try await verifier.verifyTransaction(token) }
        let fresh = try Self.verifier(clock: clock, authority: authority, validationTime: .currentTime, chainCache: policy)
        let first = await #expect(throws: AppStoreVerificationError.self) { _ = try await fresh.verifyTransaction(token) }
        #expect(cached?.code == .certificateExpired)
        #expect(cached == first, "the same error as a verifier that never saw the token")
        #expect(verifier.tokenCacheStatistics.hits == 1)
        #expect(verifier.tokenCacheStatistics.stale == 1)
        #expect(verifier.tokenCacheStatistics.entries == 0, "the stale entry is forgotten")
    }

    @Test("validation at signedDate: a hit holds while the chain is young enough, then the chain is validated again")
    func chainAgeStillApplies() async throws {
        let clock = TestClock(Self.start)
        let verifier = try Self.verifier(clock: clock, chainCache: ChainCachePolicy(maximumAge: 60))
        let token = try Self.signedTransaction()
        _ = try await verifier.verifyTransaction(token)
        clock.advance(by: 30)
        _ = try await verifier.verifyTransaction(token)
        #expect(Self.fullVerifications(verifier) == 1)
        clock.advance(by: 60)
        _ = try await verifier.verifyTransaction(token)
        #expect(Self.fullVerifications(verifier) == 2, "older than the chain cache allows: verified in full")
        #expect(verifier.tokenCacheStatistics.stale == 1)
        _ = try await verifier.verifyTransaction(token)
        #expect(verifier.tokenCacheStatistics.hits == 2, "and remembered again")
    }

    @Test("the caller's rules still apply to a hit: the app's environments, and the kind asked for")
    func perCallRules() async throws {
        let clock = TestClock(Self.start)
        let xcodeOnly = try AppStoreApp(bundleId: "com.example.xcode-only", environments: [.xcode])
        let verifier = try Self.verifier(clock: clock, extraApps: [xcodeOnly])
        let renewal = JWSRenewalInfoDecodedPayload(
            originalTransactionId: "5000000000000009", autoRenewProductId: "com.example.premium.monthly", productId: "com.example.premium.monthly",
            autoRenewStatus: .on, signedDate: Self.start, environment: .sandbox)
        let token = try SimFixture.authority.makeSigner().sign(renewal)
        _ = try await verifier.verifyRenewalInfo(token, bundleId: SimFixture.bundleId)
        let refused = await #expect(throws: AppStoreVerificationError.self) {
            _ = try await verifier.verifyRenewalInfo(token, bundleId: xcodeOnly.bundleId)
        }
        #expect(refused?.code == .wrongEnvironment)
        #expect(verifier.tokenCacheStatistics.hits == 1, "the token came from the cache, the environment rule refused it")

        let transaction = try Self.signedTransaction()
        _ = try await verifier.verifyTransaction(transaction)
        let wrongKind = await #expect(throws: AppStoreVerificationError.self) { _ = try await verifier.verifyRenewalInfo(transaction) }
        #expect(wrongKind?.code == .unexpectedKind, "a remembered transaction is never taken for renewal info")
    }

    @Test("bounded: the least recently used tokens are forgotten first")
    func bounded() async throws {
        let clock = TestClock(Self.start)
        let verifier = try Self.verifier(clock: clock, entries: 4)
        let tokens = try (0..<10).map { try Self.signedTransaction("50000000000001\(String(format: "%02d", $0))") }
        for token in tokens { _ = try await verifier.verifyTransaction(token) }
        #expect(verifier.tokenCacheStatistics.entries <= 4)
        _ = try await verifier.verifyTransaction(tokens[9])
        #expect(verifier.tokenCacheStatistics.hits == 1, "the newest is remembered")
        _ = try await verifier.verifyTransaction(tokens[0])
        #expect(verifier.tokenCacheStatistics.hits == 1, "the oldest is not")
    }

    @Test("off unless asked for, and off with the chain cache off")
    func offByDefault() async throws {
        let app = try AppStoreApp(bundleId: SimFixture.bundleId, environments: [.sandbox])
        let token = try Self.signedTransaction()
        for configuration in [
            SignedDataVerifier.Configuration(apps: [app], additionalTrustedRoots: [SimFixture.authority.root]),
            SignedDataVerifier.Configuration(
                apps: [app], additionalTrustedRoots: [SimFixture.authority.root], chainCache: .disabled,
                verifiedTokenCache: VerifiedTokenCachePolicy()),
        ] {
            let verifier = try SignedDataVerifier(configuration: configuration)
            _ = try await verifier.verifyTransaction(token)
            _ = try await verifier.verifyTransaction(token)
            #expect(verifier.tokenCacheStatistics == VerifiedTokenCacheStatistics())
        }
    }

    @Test("enrich's verifier remembers answer JWS unless ENRICH_VERIFIED_JWS_CACHE_SIZE is 0")
    func enrichConfiguration() throws {
        let keyPath = try SimFixture.writeAPIKey()
        let base = [
            "APPSTORE_APPS": "\(SimFixture.bundleId)::Sandbox", "APPSTORE_API_CREDENTIALS": "\(SimFixture.bundleId):iss:KEY:\(keyPath)",
        ]
        let standard = try EnrichConfiguration(environment: EnvironmentReader(base))
        #expect(standard.api.verifierConfiguration.verifiedTokenCache == VerifiedTokenCachePolicy(maximumEntries: 10_000))
        let off = try EnrichConfiguration(environment: EnvironmentReader(base.merging(["ENRICH_VERIFIED_JWS_CACHE_SIZE": "0"]) { $1 }))
        #expect(!off.api.verifierConfiguration.verifiedTokenCache.isEnabled)
        #expect(throws: ConfigurationError.self) {
            _ = try EnrichConfiguration(environment: EnvironmentReader(base.merging(["ENRICH_VERIFIED_JWS_CACHE_SIZE": "-1"]) { $1 }))
        }
    }
}
