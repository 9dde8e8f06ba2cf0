import AppStore
import AppStoreSigning
import Foundation
import KafkaClient
import Logging
import PipelineRecords
import StageRuntime
import TestSupport
import Testing
import VerifyService

/// The stage's logic without a broker: what each raw body becomes.
@Suite("verify stage: records and rejections")
struct VerifyStageTests {
    let stage: VerifyStage

    init() throws {
        stage = try VerifyStage(configuration: TestPKI.configuration(), logger: Logger(label: "tests"))
    }

    func message(_ body: [UInt8], source: String = PipelineHeader.Source.appleWebhook, extra: [KafkaHeader] = []) -> KafkaMessage {
        KafkaMessage(
            topic: Topics.raw, partition: 3, offset: 17, key: Array("sha".utf8), value: body,
            headers: [
                KafkaHeader(key: PipelineHeader.source, string: source),
                KafkaHeader(key: PipelineHeader.ingestedAt, string: "2026-01-01T00:00:00.000Z"),
                KafkaHeader(key: PipelineHeader.requestID, string: "req-1"),
                KafkaHeader(key: PipelineHeader.contentType, string: "application/json"),
                KafkaHeader(key: PipelineHeader.schema, string: Topics.raw),
                KafkaHeader(key: PipelineHeader.traceparent, string: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            ] + extra,
            timestamp: nil)
    }

    /// Expects `body` to be rejected with `code`, classified permanent unless said otherwise.
    func expectRejected(
        _ body: [UInt8], source: String = PipelineHeader.Source.appleWebhook, code: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            _ = try await stage.process(message(body, source: source))
            Issue.record("accepted; expected \(code)", sourceLocation: sourceLocation)
        } catch {
            let classified = FailureClassification(error)
            #expect(classified.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(!classified.isTransient, sourceLocation: sourceLocation)
        }
    }

    @Test("a notification becomes one record keyed <environment>:<originalTransactionId>, headers kept, schema replaced")
    func notification() async throws {
        let token = try TestPKI.notification(originalTransactionId: "2000000000000001", uuid: "uuid-1")
        let out = try await stage.process(message(TestPKI.webhookBody(token), extra: [KafkaHeader(key: "dlq-error-code", string: "old")]))
        let record = try #require(out.first)
        #expect(out.count == 1)
        #expect(record.topic == Topics.verified)
        #expect(record.key == Array("Sandbox:2000000000000001".utf8))
        let headers = record.headers
        #expect(headers.string(PipelineHeader.schema) == Topics.verified)
        #expect(headers.filter { $0.key == PipelineHeader.schema }.count == 1)
        #expect(headers.string(PipelineHeader.source) == "apple-webhook")
        #expect(headers.string(PipelineHeader.ingestedAt) == "2026-01-01T00:00:00.000Z")
        #expect(headers.string(PipelineHeader.requestID) == "req-1")
        #expect(headers.string(PipelineHeader.traceparent) == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        #expect(headers.string(PipelineHeader.contentType) == "application/json")
        #expect(!headers.contains { $0.key.hasPrefix("dlq-") })

        let body = try VerifiedRecord.decode(record.value)
        #expect(body.kind == .notification)
        #expect(body.source == "apple-webhook")
        #expect(body.environment == .sandbox)
        #expect(body.bundleId == TestPKI.bundleId)
        #expect(body.appAppleId == TestPKI.appAppleId)
        #expect(body.notificationUUID == "uuid-1")
        #expect(body.originalTransactionId == "2000000000000001")
        #expect(body.transactionId == "20000000000000019")
        #expect(body.notification?.notificationType == .subscribed)
        #expect(body.notification?.subtype == .initialBuy)
        #expect(body.transaction?.productId == "com.example.premium.monthly")
        #expect(body.renewalInfo?.autoRenewStatus == .on)
        #expect(body.signedPayload == token)
        #expect(body.signedTransaction == nil)
        #expect(body.hints == nil)
    }

    @Test("a TEST notification has no transaction and is keyed <environment>:notification:<notificationUUID>")
    func testNotification() async throws {
        let uuid = UUID().uuidString.lowercased()
        let out = try await stage.process(message(TestPKI.webhookBody(try TestPKI.testNotification(uuid: uuid))))
        let record = try #require(out.first)
        #expect(record.key == Array("Sandbox:notification:\(uuid)".utf8))
        let body = try VerifiedRecord.decode(record.value)
        #expect(body.notification?.notificationType == .test)
        #expect(body.transaction == nil && body.renewalInfo == nil && body.originalTransactionId == nil)
    }

    @Test("an app upload becomes the same shape with source app-upload, keeping the app's hints")
    func appUpload() async throws {
        let token = try TestPKI.signedTransaction(originalTransactionId: "2000000000000777")
        let body = TestPKI.uploadBody(token, appAccountToken: "0b7e2c55-9d0e-4a53-8d55-2f1d3c6f4a10", userId: "user-42")
        let out = try await stage.process(message(body, source: PipelineHeader.Source.appUpload))
        let record = try #require(out.first)
        #expect(record.key == Array("Sandbox:2000000000000777".utf8))
        #expect(record.headers.string(PipelineHeader.source) == "app-upload")
        let decoded = try VerifiedRecord.decode(record.value)
        #expect(decoded.kind == .transaction)
        #expect(decoded.source == "app-upload")
        #expect(decoded.environment == .sandbox)
        #expect(decoded.appAppleId == TestPKI.appAppleId)
        #expect(decoded.transaction?.originalTransactionId == "2000000000000777")
        #expect(decoded.hints == AppUploadHints(appAccountToken: UUID(uuidString: "0b7e2c55-9d0e-4a53-8d55-2f1d3c6f4a10"), userId: "user-42"))
        #expect(decoded.signedTransaction == token)
        #expect(decoded.notification == nil && decoded.signedPayload == nil)
        // Without hints there is no hints object.
        let bare = try await stage.verify(rawBody: TestPKI.uploadBody(token), source: "app-upload")
        #expect(bare.hints == nil)
    }

    @Test(
        "a test deployment configured for Xcode takes an upload of Apple's Xcode-signed transaction; the stage without it refuses the same body",
        .enabled(if: SharedFixtures.hasAppleLibraryData || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason)))
    func xcodeUpload() async throws {
        let url = try SharedFixtures.require("apple-library-testdata/xcode/xcode-signed-transaction")
        let token = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let testing = try VerifyStage(
            configuration: VerifyConfiguration(
                apps: [try AppStoreApp(bundleId: "com.example.naturelab.backyardbirds.example", environments: [.xcode])],
                additionalTrustedRoots: [TestPKI.trusted.root]),
            logger: Logger(label: "tests"))
        let body = TestPKI.uploadBody(token, userId: "tester")
        let out = try await testing.process(message(body, source: PipelineHeader.Source.appUpload))
        let record = try VerifiedRecord.decode(try #require(out.first).value)
        #expect(try #require(out.first).key == Array("Xcode:0".utf8))
        #expect(record.environment == .xcode)
        #expect(record.transaction?.productId == "pass.premium")
        await expectRejected(body, source: PipelineHeader.Source.appUpload, code: "verification.invalid_chain_length")
    }

    @Test(
        "a StoreKit 1 receipt's transaction is routed to a configured app and environment, keyed by the transaction, unverified until enrich looks it up"
    )
    func receipt() async throws {
        func body(_ receipt: RawRecord.ReceiptReference) -> [UInt8] {
            RawRecord.receiptBody(receipt, appAccountToken: "0b7e2c55-9d0e-5a53-8d55-2f1d3c6f4a10", userId: "user-42", authentication: .jwt)
        }
        let out = try await stage.process(
            message(
                body(RawRecord.ReceiptReference(transactionId: "2000000000000888", bundleId: TestPKI.bundleId, environment: "Sandbox")),
                source: PipelineHeader.Source.appReceipt))
        let record = try #require(out.first)
        #expect(record.key == Array("Sandbox:transaction:2000000000000888".utf8))
        let decoded = try VerifiedRecord.decode(record.value)
        #expect(decoded.kind == .transaction && decoded.source == "app-receipt" && decoded.transaction == nil)
        #expect(decoded.transactionId == "2000000000000888" && decoded.originalTransactionId == nil)
        #expect(decoded.hints?.isAuthenticated == true && decoded.hints?.userId == "user-42")
        // Without a bundle ID or environment: the only app and its only environment.
        let bare = try await stage.verify(rawBody: body(RawRecord.ReceiptReference(transactionId: "1")), source: "app-receipt")
        #expect(bare.bundleId == TestPKI.bundleId && bare.environment == .production, "both configured: Production first, as Apple advises")
        let sandboxOnly = try VerifyStage(
            configuration: TestPKI.configuration(environments: [.sandbox]), logger: Logger(label: "tests"))
        #expect(
            try await sandboxOnly.verify(rawBody: body(RawRecord.ReceiptReference(transactionId: "1")), source: "app-receipt").environment == .sandbox
        )
        do {
            _ = try await sandboxOnly.verify(
                rawBody: body(RawRecord.ReceiptReference(transactionId: "1", environment: "Production")), source: "app-receipt")
            Issue.record("a Sandbox-only app takes no Production receipt")
        } catch {
            #expect(FailureClassification(error).code == "verification.wrong_environment")
        }
        let refused: [(RawRecord.ReceiptReference, String)] = [
            (RawRecord.ReceiptReference(transactionId: "1", bundleId: "com.other.app"), "verification.wrong_bundle_id"),
            (RawRecord.ReceiptReference(transactionId: "1", environment: "Xcode"), "verification.wrong_environment"),
            (RawRecord.ReceiptReference(transactionId: "12a"), "record.malformed"),
        ]
        for (reference, code) in refused {
            await expectRejected(body(reference), source: PipelineHeader.Source.appReceipt, code: code)
        }
        // A receipt body under another source, or a JWS under app-receipt, is malformed.
        await expectRejected(body(RawRecord.ReceiptReference(transactionId: "1")), source: PipelineHeader.Source.appUpload, code: "record.malformed")
        await expectRejected(TestPKI.webhookBody("a.b.c"), source: PipelineHeader.Source.appReceipt, code: "record.malformed")
    }

    @Test("forgeries are rejected with the verifier's code")
    func forgeries() async throws {
        let valid = try TestPKI.notification(originalTransactionId: "2000000000000002")
        let other = try TestPKI.notification(originalTransactionId: "2000000000000003")
        await expectRejected(
            TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "1", signer: TestPKI.forger)), code: "verification.untrusted_root")
        await expectRejected(TestPKI.webhookBody(TestPKI.tampered(valid, payloadFrom: other)), code: "verification.invalid_signature")
        await expectRejected(
            TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "1", bundleId: TestPKI.otherBundleId)),
            code: "verification.wrong_bundle_id")
        // The test CA is never good enough for Production, even though the app accepts Production.
        await expectRejected(
            TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "1", environment: .production)),
            code: "verification.untrusted_root")
        // A genuine envelope around a forged nested transaction.
        await expectRejected(
            TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "1", nestedSigner: TestPKI.forger)),
            code: "verification.untrusted_root")
        await expectRejected(
            TestPKI.uploadBody(try TestPKI.signedTransaction(originalTransactionId: "1", signer: TestPKI.forger)),
            source: "app-upload", code: "verification.untrusted_root")
        await expectRejected(TestPKI.webhookBody("a.b.c"), code: "verification.malformed")
    }

    @Test(
        "bodies without a JWS are record.malformed",
        arguments: [
            ("not json", "apple-webhook"),
            ("[1,2]", "apple-webhook"),
            (#"{"something":"else"}"#, "apple-webhook"),
            (#"{"signedPayload":42}"#, "apple-webhook"),
            (#"{"signedPayload":"a.b.c","signedTransaction":"a.b.c"}"#, "apple-webhook"),
            (#"{"signedPayload":"a.b.c"}"#, "app-upload"),
            (#"{"signedTransaction":"a.b.c","appAccountToken":"not-a-uuid"}"#, "app-upload"),
            (#"{"signedTransaction":"a.b.c","userId":""}"#, "app-upload"),
            (#"{"signedPayload":"a.b.c"}"#, "somewhere-else"),
        ])
    func malformed(body: String, source: String) async {
        await expectRejected(Array(body.utf8), source: source, code: "record.malformed")
    }

    @Test("only verification.revocation_check_unavailable is transient")
    func classification() {
        let unavailable = VerificationFailure(AppStoreVerificationError(.revocationCheckUnavailable, "down"))
        #expect(unavailable.isTransient)
        #expect(FailureClassification(unavailable).code == "verification.revocation_check_unavailable")
        let signature = FailureClassification(VerificationFailure(AppStoreVerificationError(.invalidSignature, "bad")))
        #expect(!signature.isTransient)
        #expect(signature.code == "verification.invalid_signature")
        #expect(signature.message == "bad")
    }

    @Test("a warm stage reuses the verified chain")
    func chainCache() async throws {
        for i in 0..<5 {
            _ = try await stage.process(message(TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "\(i)"))))
        }
        let statistics = stage.verifier.cacheStatistics
        #expect(statistics.misses == 1)
        #expect(statistics.hits == 14)
    }
}
