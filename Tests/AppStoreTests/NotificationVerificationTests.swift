import AppStore
import AppStoreSigning
import Foundation
import TestSupport
import Testing

@Suite("Verifying notifications signed by a local test CA")
struct NotificationVerificationTests {
    @Test("a valid notification verifies with its nested transaction and renewal info")
    func validNotification() async throws {
        let authority = try TestPKI.authority()
        let signer = try authority.makeSigner()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let signedDate = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded() / 1000)
        let token = try TestPKI.notification(signer: signer, signedDate: signedDate)

        let verified = try await verifier.verifyNotification(signedPayload: token)

        #expect(verified.payload.notificationType == .subscribed)
        #expect(verified.payload.subtype == .initialBuy)
        #expect(verified.payload.signedDate == signedDate)
        #expect(verified.environment == .sandbox)
        #expect(verified.bundleId == TestPKI.bundleId)
        #expect(verified.appAppleId == TestPKI.appAppleId)
        #expect(try verified.transaction == TestPKI.transaction(signedDate: signedDate).normalized())
        #expect(try verified.renewalInfo == TestPKI.renewalInfo(signedDate: signedDate).normalized())
        #expect(verified.transaction?.price == 9990)
        #expect(verified.renewalInfo?.autoRenewStatus == .on)
    }

    @Test("a warm cache validates each distinct chain once and then only checks signatures")
    func chainCache() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let signer = try authority.makeSigner()
        for _ in 0..<5 {
            _ = try await verifier.verifyNotification(signedPayload: TestPKI.notification(signer: signer))
        }
        let statistics = verifier.cacheStatistics
        // 5 notifications × 3 JWS, all with the same header: one miss, then hits.
        #expect(statistics.misses == 1)
        #expect(statistics.hits == 14)
        #expect(statistics.entries == 1)

        verifier.removeCachedChains()
        #expect(verifier.cacheStatistics.entries == 0)
    }

    @Test("with the cache disabled every JWS is validated from scratch and still verifies")
    func cacheDisabled() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root], chainCache: .disabled)
        let signer = try authority.makeSigner()
        for _ in 0..<2 {
            _ = try await verifier.verifyNotification(signedPayload: TestPKI.notification(signer: signer))
        }
        #expect(verifier.cacheStatistics == ChainCacheStatistics())
    }

    @Test("the cache is bounded in size and age")
    func cacheBounds() async throws {
        let authority = try TestPKI.authority()
        let clock = TestClock()
        let verifier = try TestPKI.verifier(
            trusting: [authority.root],
            chainCache: ChainCachePolicy(maximumEntries: 2, maximumAge: 60),
            clock: { clock.now }
        )
        let signers = try (0..<3).map { _ in try authority.issueLeaf() }
        for signer in signers {
            _ = try await verifier.verifyTransaction(signer.sign(TestPKI.transaction()))
        }
        #expect(verifier.cacheStatistics.entries == 2)
        #expect(verifier.cacheStatistics.evictions == 1)

        let last = try signers[2].sign(TestPKI.transaction())
        _ = try await verifier.verifyTransaction(last)
        #expect(verifier.cacheStatistics.hits == 1)
        clock.advance(by: 61)
        _ = try await verifier.verifyTransaction(last)
        #expect(verifier.cacheStatistics.hits == 1, "an entry older than maximumAge is validated again")
    }

    @Test("one verifier serves several apps and both environments")
    func severalApps() async throws {
        let authority = try TestPKI.authority()
        let signer = try authority.makeSigner()
        let verifier = try TestPKI.verifier(
            trusting: [authority.root],
            apps: [
                TestPKI.app(environments: [.sandbox]),
                TestPKI.app(bundleId: TestPKI.otherBundleId, appAppleId: 42, environments: [.sandbox, .production]),
            ]
        )
        let first = try await verifier.verifyNotification(signedPayload: TestPKI.notification(signer: signer))
        let second = try await verifier.verifyNotification(
            signedPayload: TestPKI.notification(signer: signer, bundleId: TestPKI.otherBundleId, appAppleId: 42)
        )
        #expect(first.bundleId == TestPKI.bundleId)
        #expect(second.bundleId == TestPKI.otherBundleId)
        #expect(second.appAppleId == 42)
    }

    @Test("a RESCIND_CONSENT notification verifies its nested app transaction")
    func rescindConsent() async throws {
        let authority = try TestPKI.authority()
        let signer = try authority.makeSigner()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let appTransaction = AppTransaction(
            receiptType: .sandbox,
            appAppleId: TestPKI.appAppleId,
            bundleId: TestPKI.bundleId,
            applicationVersion: "1.2",
            receiptCreationDate: Date(),
            originalPurchaseDate: Date().addingTimeInterval(-1000),
            appTransactionId: "704000000000000001",
            originalPlatform: .iOS
        )
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .rescindConsent,
            notificationUUID: UUID().uuidString,
            appData: AppData(
                appAppleId: TestPKI.appAppleId,
                bundleId: TestPKI.bundleId,
                environment: .sandbox,
                signedAppTransactionInfo: try signer.sign(appTransaction)
            ),
            version: "2.0",
            signedDate: Date()
        )
        let verified = try await verifier.verifyNotification(signedPayload: signer.sign(payload))
        #expect(verified.appTransaction?.originalPlatform == .iOS)
        #expect(verified.transaction == nil)
    }

    @Test("summary and external purchase token notifications resolve their app")
    func otherSubObjects() async throws {
        let authority = try TestPKI.authority()
        let signer = try authority.makeSigner()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let summary = ResponseBodyV2DecodedPayload(
            notificationType: .renewalExtension,
            subtype: .summary,
            notificationUUID: UUID().uuidString,
            summary: Summary(
                environment: .sandbox,
                appAppleId: TestPKI.appAppleId,
                bundleId: TestPKI.bundleId,
                productId: "p",
                requestIdentifier: "r",
                storefrontCountryCodes: ["USA", "CAN"],
                succeededCount: 5,
                failedCount: 2
            ),
            signedDate: Date()
        )
        let verifiedSummary = try await verifier.verifyNotification(signedPayload: signer.sign(summary))
        #expect(verifiedSummary.payload.summary?.failedCount == 2)

        let token = ResponseBodyV2DecodedPayload(
            notificationType: .externalPurchaseToken,
            subtype: .unreported,
            notificationUUID: UUID().uuidString,
            externalPurchaseToken: ExternalPurchaseToken(
                externalPurchaseId: "SANDBOX_1234",
                tokenCreationDate: 1_698_148_900_000,
                appAppleId: TestPKI.appAppleId,
                bundleId: TestPKI.bundleId
            ),
            signedDate: Date()
        )
        let verifiedToken = try await verifier.verifyNotification(signedPayload: signer.sign(token))
        #expect(verifiedToken.environment == .sandbox)

        var production = token
        production.externalPurchaseToken?.externalPurchaseId = "1234"
        await expectRejection(.wrongEnvironment) {
            try await verifier.verifyNotification(signedPayload: signer.sign(production))
        }
    }

    @Test("verify(_:) detects the kind and verifies accordingly")
    func verifyAnyKind() async throws {
        let authority = try TestPKI.authority()
        let signer = try authority.makeSigner()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let notification = try TestPKI.notification(signer: signer)
        let transaction = try signer.sign(TestPKI.transaction())
        let renewal = try signer.sign(TestPKI.renewalInfo())

        #expect(try SignedDataVerifier.detectKind(of: notification) == .notification)
        #expect(try SignedDataVerifier.detectKind(of: transaction) == .transaction)
        #expect(try SignedDataVerifier.detectKind(of: renewal) == .renewalInfo)
        #expect(try await verifier.verify(notification).kind == .notification)
        guard case .transaction(let decoded) = try await verifier.verify(transaction) else {
            Issue.record("not a transaction")
            return
        }
        #expect(decoded.bundleId == TestPKI.bundleId)
        #expect(try await verifier.verify(renewal).kind == .renewalInfo)

        await expectRejection(.unexpectedKind) { try await verifier.verifyRenewalInfo(transaction) }
        await expectRejection(.unexpectedKind) { try await verifier.verifyTransaction(notification) }
        await expectRejection(.malformed) { try SignedDataVerifier.detectKind(of: signer.sign(["hello": "world"])) }
    }

    @Test("inspecting a JWS shows its claims without verifying")
    func inspect() throws {
        let authority = try TestPKI.authority()
        let token = try authority.makeSigner().sign(TestPKI.transaction())
        let inspected = try InspectedJWS(token)
        #expect(inspected.algorithm == "ES256")
        #expect(inspected.certificates == [authority.leaf, authority.intermediate, authority.root])
        #expect(inspected.kind == .transaction)
        guard case .object(let object) = inspected.payload else {
            Issue.record("payload is not an object")
            return
        }
        #expect(object["bundleId"] == .string(TestPKI.bundleId))
    }
}

extension Encodable where Self: Decodable {
    /// This value as it comes back from Apple-style JSON (dates rounded to milliseconds).
    func normalized() throws -> Self {
        try AppStoreJSON.decoder.decode(Self.self, from: AppStoreJSON.encoder.encode(self))
    }
}
