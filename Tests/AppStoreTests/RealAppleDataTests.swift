import AppStore
import Crypto
import Foundation
import SwiftASN1
import TestSupport
import Testing
import X509

@Suite("Apple's real certificates and signed data")
struct RealAppleDataTests {
    static func date(_ iso: String) throws -> Date {
        try #require(ISO8601DateFormatter().date(from: iso))
    }

    @Test("the embedded Apple Root CA - G3 is the published certificate")
    func embeddedRoot() throws {
        let digest = SHA256.hash(data: AppleRootCertificates.appleRootCAG3DER)
        let hex = digest.map { String(format: "%02x", $0) }.joined()
        #expect(hex == AppleRootCertificates.appleRootCAG3SHA256)
        #expect(hex == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        let root = try #require(AppleRootCertificates.appleRootCAG3)
        #expect(root.subject.description.contains("Apple Root CA - G3"))
        if let url = SharedFixtures.url("apple-library-testdata/inline-test-certs/real-apple-root-ca-g3.der") {
            #expect(try Array(Data(contentsOf: url)) == AppleRootCertificates.appleRootCAG3DER)
        } else if TestServices.isCI {
            Issue.record(
                "\(SharedFixtures.missing("apple-library-testdata/inline-test-certs/real-apple-root-ca-g3.der")); CI compares the embedded root with it"
            )
        } else {
            print("embedded root: not compared with Apple's published file, because \(SharedFixtures.skipReason)")
        }
    }

    @Test("the real chain leaf → WWDR G6 → embedded root verifies inside the leaf's validity and not after")
    func realChain() async throws {
        let leaf = try RealAppleCertificates.leaf2025()
        let intermediate = try RealAppleCertificates.wwdrG6()
        let validator = AppStoreChainValidator(trustedRoots: [])

        let chain = try await validator.validate(
            leaf: leaf,
            intermediate: intermediate,
            at: Self.date("2026-01-01T00:00:00Z")
        )
        #expect(chain.isAnchoredInAppleRoot)
        #expect(chain.root == AppleRootCertificates.appleRootCAG3)

        await expectRejection(.certificateExpired) {
            try await validator.validate(leaf: leaf, intermediate: intermediate, at: Self.date("2027-11-01T00:00:00Z"))
        }
        await expectRejection(.certificateNotYetValid) {
            try await validator.validate(leaf: leaf, intermediate: intermediate, at: Self.date("2025-09-01T00:00:00Z"))
        }
        await expectRejection(.untrustedRoot) {
            try await AppStoreChainValidator(trustedRoots: [], trustAppleRoot: false)
                .validate(leaf: leaf, intermediate: intermediate, at: Self.date("2026-01-01T00:00:00Z"))
        }
        // The real intermediate cannot stand in for a leaf (no receipt-signing marker).
        await expectRejection(.missingMarkerExtension) {
            try await validator.validate(
                leaf: intermediate,
                intermediate: intermediate,
                at: Self.date("2026-01-01T00:00:00Z")
            )
        }
    }

    typealias Sample = SharedFixtures.RealSample

    static func samples() throws -> [Sample] { try SharedFixtures.realSamples() }

    static func token(_ sample: Sample) throws -> String { try SharedFixtures.realToken(sample.file) }

    /// The configuration Apple's Python library was run with for this sample (README + manifest).
    static func verifier(
        for sample: Sample,
        in all: [Sample],
        environment override: AppStoreEnvironment? = nil,
        validationTime: SignedDataVerifier.ValidationTime = .signedDate
    ) throws -> SignedDataVerifier {
        let parent = all.first { $0.file == sample.parentFile }
        let bundleId = sample.bundleId ?? parent?.bundleId ?? "unknown.bundle"
        let environment = override ?? sample.environment.map { AppStoreEnvironment(rawValue: $0) } ?? .production
        let appAppleId = sample.appAppleId ?? parent?.appAppleId ?? (environment == .production ? 1 : nil)
        let app = try AppStoreApp(bundleId: bundleId, appAppleId: appAppleId, environments: [environment])
        return try SignedDataVerifier(configuration: .init(apps: [app], validationTime: validationTime))
    }

    static func verify(_ token: String, kind: String, with verifier: SignedDataVerifier) async throws {
        switch kind {
        case "notification": _ = try await verifier.verifyNotification(signedPayload: token)
        case "transaction": _ = try await verifier.verifyTransaction(token)
        case "renewal": _ = try await verifier.verifyRenewalInfo(token)
        default: Issue.record("unknown sample kind \(kind)")
        }
    }

    @Test(
        "every real Apple sample gets the same verdict as Apple's library",
        .enabled(if: SharedFixtures.hasRealJWS || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason))
    )
    func realSamples() async throws {
        let samples = try Self.samples()
        var accepted = 0
        var rejected: [String: AppStoreVerificationError.Code] = [:]
        let kinds: [String: SignedDataKind] = ["notification": .notification, "transaction": .transaction, "renewal": .renewalInfo]
        for sample in samples {
            let verifier = try Self.verifier(for: sample, in: samples)
            #expect(try SignedDataVerifier.detectKind(of: Self.token(sample)) == kinds[sample.kind], "\(sample.file)")
            do {
                try await Self.verify(Self.token(sample), kind: sample.kind, with: verifier)
                accepted += 1
                #expect(sample.appleLibraryVerdict.hasPrefix("OK"), "\(sample.file) accepted, Apple rejects")
            } catch let error as AppStoreVerificationError {
                rejected[sample.file] = error.code
                #expect(sample.appleLibraryVerdict.hasPrefix("INVALID_ENVIRONMENT"), "\(sample.file): \(error)")
                #expect(error.code == .wrongEnvironment, "\(sample.file): \(error)")
            }
        }
        #expect(samples.count == 57)
        #expect(accepted == 56)
        #expect(rejected == ["legacy-no-environment-transaction-consumable-revoked-1.jws": .wrongEnvironment])
    }

    @Test(
        "real samples are rejected under the other environment and after their leaf expired",
        .enabled(if: SharedFixtures.hasRealJWS || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason))
    )
    func realSampleNegatives() async throws {
        let samples = try Self.samples().filter { $0.environment != nil }
        for sample in samples {
            let token = try Self.token(sample)
            let other: AppStoreEnvironment = sample.environment == "Sandbox" ? .production : .sandbox
            await expectRejection(.wrongEnvironment) {
                try await Self.verify(
                    token,
                    kind: sample.kind,
                    with: Self.verifier(for: sample, in: samples, environment: other)
                )
            }
            let late = try Self.verifier(
                for: sample,
                in: samples,
                validationTime: .fixed(Self.date("2027-11-01T00:00:00Z"))
            )
            await expectRejection(.certificateExpired) { try await Self.verify(token, kind: sample.kind, with: late) }
        }
    }

    @Test(
        "a real notification re-verified at today's date fails only when its leaf has expired",
        .enabled(if: SharedFixtures.hasRealJWS || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason))
    )
    func realSampleAtNow() async throws {
        let samples = try Self.samples()
        let sample = try #require(samples.first { $0.file == "production-notification-test-1.jws" })
        let verifier = try Self.verifier(for: sample, in: samples, validationTime: .currentTime)
        // Its leaf (2023-09-12 → 2025-10-11) has expired since; offline at signedDate it verifies.
        await expectRejection(.certificateExpired) {
            try await verifier.verifyNotification(signedPayload: Self.token(sample))
        }
        let production = try Self.verifier(for: sample, in: samples)
        let verified = try await production.verifyNotification(signedPayload: Self.token(sample))
        #expect(verified.environment == .production)
        #expect(verified.payload.notificationType == .test)
    }

    @Test(
        "Apple's library test data gives Apple's verdicts",
        .enabled(if: SharedFixtures.hasAppleLibraryData || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason)))
    func appleLibraryTestData() async throws {
        let rootURL = try SharedFixtures.require("apple-library-testdata/certs/testCA.der")
        let root = try Certificate(derEncoded: Array(Data(contentsOf: rootURL)))
        func token(_ name: String) throws -> String {
            let url = try SharedFixtures.require("apple-library-testdata/\(name)")
            return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func verifier(_ environments: Set<AppStoreEnvironment>, appAppleId: Int64 = 1234) throws -> SignedDataVerifier {
            try SignedDataVerifier(
                configuration: .init(
                    apps: [AppStoreApp(bundleId: "com.example", appAppleId: appAppleId, environments: environments)],
                    additionalTrustedRoots: [root]
                )
            )
        }
        // x5c[2] differs from testCA.der but the chain must verify: the root comes from configuration.
        let notification = try await verifier([.sandbox]).verifyNotification(
            signedPayload: token("mock_signed_data/testNotification")
        )
        #expect(notification.payload.notificationType == .test)
        await expectRejection(.wrongEnvironment) {
            try await verifier([.production]).verifyNotification(
                signedPayload: token("mock_signed_data/testNotification")
            )
        }
        _ = try await verifier([.sandbox]).verifyTransaction(token("mock_signed_data/transactionInfo"))
        let renewal = try await verifier([.sandbox]).verifyRenewalInfo(token("mock_signed_data/renewalInfo"))
        #expect(renewal.environment == .sandbox)
        await expectRejection(.wrongEnvironment) {
            try await verifier([.production]).verifyRenewalInfo(token("mock_signed_data/renewalInfo"))
        }
        await expectRejection(.invalidChainLength) {
            try await verifier([.sandbox]).verifyNotification(
                signedPayload: token("mock_signed_data/missingX5CHeaderClaim")
            )
        }
        await expectRejection(.wrongBundleId) {
            try await verifier([.sandbox]).verifyNotification(signedPayload: token("mock_signed_data/wrongBundleId"))
        }
        // Xcode-signed data carries a one-certificate chain and is never accepted as App Store data.
        await expectRejection(.invalidChainLength) {
            try await verifier([.sandbox]).verifyTransaction(token("xcode/xcode-signed-transaction"))
        }
        // Apple's malformed inline strings.
        await expectRejection(.malformed) {
            try await verifier([.sandbox]).verifyNotification(signedPayload: "a.b.c.d")
        }
    }
}
