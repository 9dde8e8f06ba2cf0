import AppStore
import AppStoreSigning
import Foundation
import TestSupport
import Testing

/// StoreKit Testing in Xcode signs with one self-signed certificate. A test deployment that names
/// an app with environment `Xcode` accepts such data for that app (Apple's own fixtures); nothing
/// else does, and the single certificate never vouches for Sandbox or Production data.
@Suite(
    "Xcode-signed data for test deployments",
    .enabled(if: SharedFixtures.hasAppleLibraryData || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason)))
struct XcodeSignedDataTests {
    static let bundleId = "com.example.naturelab.backyardbirds.example"

    static func fixture(_ name: String) throws -> String {
        try String(contentsOf: try SharedFixtures.require("apple-library-testdata/xcode/\(name)"), encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    static func verifier(_ environments: Set<AppStoreEnvironment>, appAppleId: Int64? = nil) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(apps: [AppStoreApp(bundleId: bundleId, appAppleId: appAppleId, environments: environments)]))
    }

    @Test("Apple's Xcode-signed transaction, renewal info and app transaction pass a verifier configured for Xcode")
    func appleFixturesAccepted() async throws {
        let verifier = try Self.verifier([.xcode])
        let transaction = try await verifier.verifyTransaction(Self.fixture("xcode-signed-transaction"))
        #expect(transaction.environment == .xcode)
        #expect(transaction.productId == "pass.premium")
        #expect(transaction.transactionId == "0")
        let renewal = try await verifier.verifyRenewalInfo(Self.fixture("xcode-signed-renewal-info"), bundleId: Self.bundleId)
        #expect(renewal.environment == .xcode)
        #expect(renewal.autoRenewProductId == "pass.premium")
        let app = try await verifier.verifyAppTransaction(Self.fixture("xcode-signed-app-transaction"))
        #expect(app.receiptType == .xcode)
        #expect(app.bundleId == Self.bundleId)
        // A Sandbox app of the same test deployment may sit beside it.
        let both = try Self.verifier([.xcode, .sandbox])
        #expect(try await both.verifyTransaction(Self.fixture("xcode-signed-transaction")).environment == .xcode)
    }

    @Test("without Xcode configured the same tokens are refused as Apple's libraries refuse them for Sandbox")
    func refusedWithoutXcode() async throws {
        let sandbox = try Self.verifier([.sandbox])
        await expectRejection(.invalidChainLength) {
            try await sandbox.verifyTransaction(Self.fixture("xcode-signed-transaction"))
        }
        await expectRejection(.invalidChainLength) {
            try await sandbox.verifyAppTransaction(Self.fixture("xcode-signed-app-transaction"))
        }
    }

    @Test("one certificate never vouches for Sandbox or Production data, nor for another app, nor for a changed payload")
    func singleCertificateLimits() async throws {
        let forger = try TestPKI.authority(SigningAuthorityOptions(name: "Forger"))
        let signer = try JWSSigner(key: forger.leafKey, certificateChain: [forger.leaf])
        let verifier = try Self.verifier([.xcode, .sandbox])
        // Sandbox data signed like Xcode's: refused however valid its signature.
        let sandbox = try signer.sign(TestPKI.transaction(environment: .sandbox, bundleId: Self.bundleId))
        await expectRejection(.untrustedRoot) { try await verifier.verifyTransaction(sandbox) }
        let renewal = try signer.sign(TestPKI.renewalInfo(environment: .sandbox))
        await expectRejection(.untrustedRoot) {
            try await verifier.verifyRenewalInfo(renewal, bundleId: Self.bundleId)
        }
        // Xcode data for an app not configured for Xcode.
        let other = try signer.sign(TestPKI.transaction(environment: .xcode, bundleId: TestPKI.bundleId))
        await expectRejection(.wrongBundleId) { try await verifier.verifyTransaction(other) }
        // Xcode's own token with its payload replaced: the signature no longer matches its certificate.
        let genuine = try Self.fixture("xcode-signed-transaction")
        let changed = TestPKI.tampered(genuine, payloadFrom: try signer.sign(TestPKI.transaction(environment: .xcode, bundleId: Self.bundleId)))
        await expectRejection(.invalidSignature) { try await verifier.verifyTransaction(changed) }
    }

    @Test("a deployment that accepts Production cannot also accept Xcode; the app list reads Xcode")
    func productionExcludesXcode() throws {
        #expect(throws: AppStoreConfigurationError.self) {
            try SignedDataVerifier(
                configuration: .init(apps: [
                    AppStoreApp(bundleId: Self.bundleId, environments: [.xcode]),
                    AppStoreApp(bundleId: TestPKI.bundleId, appAppleId: TestPKI.appAppleId, environments: [.production]),
                ]))
        }
        let apps = try AppListParser.parseList("\(Self.bundleId)::Xcode+Sandbox")
        #expect(apps.first?.environments == [.xcode, .sandbox])
        #expect(throws: AppListParser.ParseError.self) { try AppListParser.parseList("\(Self.bundleId)::LocalTesting") }
    }
}
