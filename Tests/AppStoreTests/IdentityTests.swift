import AppStore
import AppStoreSigning
import Foundation
import TestSupport
import Testing

@Suite("App identity and environment checks")
struct IdentityTests {
    @Test("a notification for another bundle ID is rejected")
    func wrongBundle() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        await expectRejection(.wrongBundleId) {
            try await verifier.verifyNotification(
                signedPayload: TestPKI.notification(signer: authority.makeSigner(), bundleId: "com.evil.app")
            )
        }
        await expectRejection(.wrongBundleId) {
            try await verifier.verifyTransaction(
                authority.makeSigner().sign(TestPKI.transaction(bundleId: "com.evil.app"))
            )
        }
    }

    @Test("a nested transaction of another configured app is rejected")
    func nestedBundleMismatch() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(
            trusting: [authority.root],
            apps: [
                TestPKI.app(environments: [.sandbox]),
                TestPKI.app(bundleId: TestPKI.otherBundleId, environments: [.sandbox]),
            ]
        )
        let token = try TestPKI.notification(
            signer: authority.makeSigner(),
            transaction: TestPKI.transaction(bundleId: TestPKI.otherBundleId)
        )
        await expectRejection(.wrongBundleId) { try await verifier.verifyNotification(signedPayload: token) }
    }

    @Test("a nested JWS from another environment is rejected")
    func nestedEnvironmentMismatch() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let token = try TestPKI.notification(
            signer: authority.makeSigner(),
            renewalInfo: TestPKI.renewalInfo(environment: .production)
        )
        await expectRejection(.wrongEnvironment) { try await verifier.verifyNotification(signedPayload: token) }
    }

    @Test("a Production notification with another app Apple ID is rejected")
    func wrongAppAppleId() async throws {
        // Production requires Apple's root; use a verifier that checks identity before trust by
        // configuring Production and observing the app-ID failure ordering on a test chain.
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(
            trusting: [authority.root],
            apps: [TestPKI.app(environments: [.production])]
        )
        await expectRejection(.wrongAppAppleId) {
            try await verifier.verifyNotification(
                signedPayload: TestPKI.notification(
                    signer: authority.makeSigner(),
                    environment: .production,
                    appAppleId: 99
                )
            )
        }
        await expectRejection(.wrongAppAppleId) {
            try await verifier.verifyNotification(
                signedPayload: TestPKI.notification(
                    signer: authority.makeSigner(),
                    environment: .production,
                    appAppleId: nil
                )
            )
        }
    }

    @Test("in Sandbox the app Apple ID is not required, as in Apple's libraries")
    func sandboxWithoutAppAppleId() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let verified = try await verifier.verifyNotification(
            signedPayload: TestPKI.notification(signer: authority.makeSigner(), appAppleId: nil)
        )
        #expect(verified.payload.data?.appAppleId == nil)
    }

    @Test("a Sandbox notification is rejected when only Production is configured")
    func sandboxWhenOnlyProduction() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(
            trusting: [authority.root],
            apps: [TestPKI.app(environments: [.production])]
        )
        await expectRejection(.wrongEnvironment) {
            try await verifier.verifyNotification(signedPayload: TestPKI.notification(signer: authority.makeSigner()))
        }
        await expectRejection(.wrongEnvironment) {
            try await verifier.verifyRenewalInfo(authority.makeSigner().sign(TestPKI.renewalInfo()))
        }
    }

    @Test("payloads without an environment or app are rejected")
    func missingIdentity() async throws {
        let authority = try TestPKI.authority()
        let signer = try authority.makeSigner()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        var transaction = TestPKI.transaction()
        transaction.environment = nil
        await expectRejection(.wrongEnvironment) { try await verifier.verifyTransaction(signer.sign(transaction)) }
        transaction.environment = .unknown("Staging")
        await expectRejection(.wrongEnvironment) { try await verifier.verifyTransaction(signer.sign(transaction)) }

        let bare = ResponseBodyV2DecodedPayload(notificationType: .test, notificationUUID: "u", signedDate: Date())
        await expectRejection(.wrongBundleId) {
            try await verifier.verifyNotification(signedPayload: signer.sign(bare))
        }
    }

    @Test("renewal info is checked against the named app's environments")
    func renewalForBundle() async throws {
        let authority = try TestPKI.authority()
        let signer = try authority.makeSigner()
        let verifier = try TestPKI.verifier(
            trusting: [authority.root],
            apps: [
                TestPKI.app(environments: [.sandbox]),
                TestPKI.app(bundleId: TestPKI.otherBundleId, environments: [.production]),
            ]
        )
        let renewal = try signer.sign(TestPKI.renewalInfo())
        _ = try await verifier.verifyRenewalInfo(renewal)
        _ = try await verifier.verifyRenewalInfo(renewal, bundleId: TestPKI.bundleId)
        await expectRejection(.wrongEnvironment) {
            try await verifier.verifyRenewalInfo(renewal, bundleId: TestPKI.otherBundleId)
        }
        await expectRejection(.wrongBundleId) { try await verifier.verifyRenewalInfo(renewal, bundleId: "com.unknown") }
    }

    @Test("configurations that cannot be used safely are refused at construction")
    func configurationErrors() throws {
        #expect(throws: AppStoreConfigurationError.self) {
            try AppStoreApp(bundleId: TestPKI.bundleId, environments: [.production])
        }
        #expect(throws: AppStoreConfigurationError.self) { try AppStoreApp(bundleId: "", environments: [.sandbox]) }
        #expect(throws: AppStoreConfigurationError.self) {
            try AppStoreApp(bundleId: TestPKI.bundleId, environments: [])
        }
        #expect(throws: AppStoreConfigurationError.self) { try SignedDataVerifier(configuration: .init(apps: [])) }
        let app = try TestPKI.app()
        #expect(throws: AppStoreConfigurationError.self) {
            try SignedDataVerifier(configuration: .init(apps: [app, app]))
        }
        #expect(throws: AppStoreConfigurationError.self) {
            try SignedDataVerifier(configuration: .init(apps: [app], trustsAppleRootCAG3: false))
        }
    }
}
