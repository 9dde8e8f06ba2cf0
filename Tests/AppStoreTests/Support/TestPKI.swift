import AppStore
import AppStoreSigning
import Crypto
import Foundation
import Synchronization
import Testing
import X509

/// Test material built in code: authorities, verifiers and signed sample data.
enum TestPKI {
    static let bundleID = "com.example.entitlements"
    static let otherBundleID = "com.example.other"
    static let appAppleID: Int64 = 1_234_567_890

    /// A fresh authority with default options.
    static func authority(_ options: SigningAuthorityOptions = SigningAuthorityOptions()) throws -> SigningAuthority {
        try SigningAuthority(options: options)
    }

    /// The app accepted by most tests: Sandbox and Production.
    static func app(
        bundleID: String = bundleID,
        appAppleID: Int64? = appAppleID,
        environments: Set<AppStoreEnvironment> = [.sandbox, .production]
    ) throws -> AppStoreApp {
        try AppStoreApp(bundleID: bundleID, appAppleID: appAppleID, environments: environments)
    }

    /// A verifier trusting `roots` (and Apple's root).
    static func verifier(
        trusting roots: [Certificate],
        apps: [AppStoreApp]? = nil,
        validationTime: SignedDataVerifier.ValidationTime = .signedDate,
        revocationChecking: RevocationChecking? = nil,
        chainCache: ChainCachePolicy = .default,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                apps: apps ?? [app(environments: [.sandbox])],
                additionalTrustedRoots: roots,
                validationTime: validationTime,
                revocationChecking: revocationChecking,
                chainCache: chainCache,
                clock: clock
            )
        )
    }

    static func transaction(
        environment: AppStoreEnvironment = .sandbox,
        bundleID: String = bundleID,
        signedDate: Date = Date()
    ) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: "2000000000000001",
            transactionId: "2000000000000042",
            webOrderLineItemId: "2000000000000099",
            bundleId: bundleID,
            productId: "com.example.premium.monthly",
            subscriptionGroupIdentifier: "21000000",
            purchaseDate: signedDate.addingTimeInterval(-60),
            originalPurchaseDate: signedDate.addingTimeInterval(-86_400),
            expiresDate: signedDate.addingTimeInterval(30 * 86_400),
            quantity: 1,
            type: .autoRenewableSubscription,
            appAccountToken: UUID(uuidString: "7E3FB20B-4CDD-4A63-9B6C-1A2D5F1E0C11"),
            inAppOwnershipType: .purchased,
            signedDate: signedDate,
            environment: environment,
            storefront: "USA",
            storefrontId: "143441",
            transactionReason: .purchase,
            currency: "USD",
            price: 9990,
            appTransactionId: "704000000000000001"
        )
    }

    static func renewalInfo(environment: AppStoreEnvironment = .sandbox, signedDate: Date = Date())
        -> JWSRenewalInfoDecodedPayload
    {
        JWSRenewalInfoDecodedPayload(
            originalTransactionId: "2000000000000001",
            autoRenewProductId: "com.example.premium.monthly",
            productId: "com.example.premium.monthly",
            autoRenewStatus: .on,
            isInBillingRetryPeriod: false,
            signedDate: signedDate,
            environment: environment,
            recentSubscriptionStartDate: signedDate.addingTimeInterval(-86_400),
            renewalDate: signedDate.addingTimeInterval(30 * 86_400),
            currency: "USD",
            renewalPrice: 9990
        )
    }

    /// A signed `SUBSCRIBED/INITIAL_BUY` notification whose nested transaction and renewal info are
    /// signed by `nestedSigner` (default: the same signer).
    static func notification(
        signer: JWSSigner,
        nestedSigner: JWSSigner? = nil,
        environment: AppStoreEnvironment = .sandbox,
        bundleID: String = bundleID,
        appAppleID: Int64? = appAppleID,
        signedDate: Date = Date(),
        transaction: JWSTransactionDecodedPayload? = nil,
        renewalInfo: JWSRenewalInfoDecodedPayload? = nil
    ) throws -> String {
        let nested = nestedSigner ?? signer
        let transaction =
            transaction ?? Self.transaction(environment: environment, bundleID: bundleID, signedDate: signedDate)
        let renewal = renewalInfo ?? Self.renewalInfo(environment: environment, signedDate: signedDate)
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed,
            subtype: .initialBuy,
            notificationUUID: UUID().uuidString.lowercased(),
            data: NotificationData(
                environment: environment,
                appAppleId: appAppleID,
                bundleId: bundleID,
                bundleVersion: "42",
                signedTransactionInfo: try nested.sign(transaction),
                signedRenewalInfo: try nested.sign(renewal),
                status: .active
            ),
            version: "2.0",
            signedDate: signedDate
        )
        return try signer.sign(payload)
    }

    /// The directory of shared fixtures beside the repository, when present.
    static let fixturesDirectory: URL? = {
        let repository = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // Support
            .deletingLastPathComponent()  // AppStoreTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // repository root
        let fixtures = repository.deletingLastPathComponent().appendingPathComponent("shared/fixtures")
        return FileManager.default.fileExists(atPath: fixtures.path) ? fixtures : nil
    }()

    static var hasRealJWSFixtures: Bool {
        fixture("apple-real-jws/manifest.json") != nil
    }

    static var hasAppleLibraryFixtures: Bool {
        fixture("apple-library-testdata/certs/testCA.der") != nil
    }

    /// A fixture file's URL, when the fixtures are present.
    static func fixture(_ path: String) -> URL? {
        guard let url = fixturesDirectory?.appendingPathComponent(path),
            FileManager.default.fileExists(atPath: url.path)
        else { return nil }
        return url
    }
}

/// Expects `body` to throw an ``AppStoreVerificationError`` with `code`.
func expectRejection<T>(
    _ code: AppStoreVerificationError.Code,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async {
    do {
        _ = try await body()
        Issue.record("expected rejection with \(code) but the input was accepted", sourceLocation: sourceLocation)
    } catch let error as AppStoreVerificationError {
        #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected AppStoreVerificationError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// A counter shared with `@Sendable` closures in tests.
final class Counter: Sendable {
    private let value = Mutex(0)

    func increment() {
        value.withLock { $0 += 1 }
    }

    var count: Int { value.withLock { $0 } }
}

/// A clock tests can move.
final class TestClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date()) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
