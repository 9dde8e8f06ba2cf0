import AppStore
import AppStoreSigning
import Foundation
import TestSupport
import Testing

/// `inspect`'s logic in-process: input forms, assumptions and verdicts.
@Suite("inspection plans")
struct InspectionPlanTests {
    let trusting = InspectOptions(trustedRoots: [TestPKI.trusted.root])

    @Test("a bare token, a JSON string and both body forms yield the token")
    func inputs() throws {
        let token = try TestPKI.signedTransaction(originalTransactionId: "1")
        #expect(try InspectInput.extract(from: "  \(token)\n").token == token)
        let half = token.index(token.startIndex, offsetBy: token.count / 2)
        #expect(try InspectInput.extract(from: "\(token[..<half])\n  \(token[half...])").token == token)
        #expect(try InspectInput.extract(from: "\"\(token)\"").token == token)
        let payload = try InspectInput.extract(from: #"{"signedPayload":"\#(token)"}"#)
        #expect(payload.token == token && payload.field == "signedPayload")
        let upload = try InspectInput.extract(from: #"{"signedTransaction":"\#(token)","userId":"x"}"#)
        #expect(upload.token == token && upload.field == "signedTransaction")
        for bad in ["", "{", #"{"other":1}"#, "[1]"] {
            #expect(throws: InspectFailure.self) { try InspectInput.extract(from: bad) }
        }
    }

    @Test("claims fill what flags leave out, and each assumption is stated")
    func assumptions() async throws {
        let plan = try InspectionPlan(input: try TestPKI.notification(originalTransactionId: "5"), options: trusting)
        #expect(plan.kind == .notification)
        #expect(plan.app.bundleId == TestPKI.bundleId)
        #expect(plan.app.environments == [.sandbox])
        #expect(plan.app.appAppleId == TestPKI.appAppleId)
        #expect(plan.assumptions.count == 4)
        let report = try await plan.run()
        #expect(report.notification?.transaction?.originalTransactionId == "5")
        #expect(report.checkedAgainst.assumedFromToken == ["bundleId", "environment", "appAppleId"])
        #expect(report.certificates.count == 3)

        var flags = trusting
        flags.bundleId = TestPKI.bundleId
        flags.environment = .sandbox
        flags.appAppleId = TestPKI.appAppleId
        let explicit = try InspectionPlan(input: try TestPKI.notification(originalTransactionId: "5"), options: flags)
        #expect(explicit.assumptions.isEmpty)
    }

    @Test("every kind is detected and verified")
    func kinds() async throws {
        let signer = TestPKI.signer
        let renewal = try signer.sign(TestPKI.renewalInfo(originalTransactionId: "7"))
        let renewalReport = try await InspectionPlan(input: renewal, options: trusting).run()
        #expect(renewalReport.kind == .renewalInfo)
        #expect(renewalReport.renewalInfo?.originalTransactionId == "7")
        let transaction = try await InspectionPlan(input: try TestPKI.signedTransaction(originalTransactionId: "8"), options: trusting).run()
        #expect(transaction.kind == .transaction)
        let appTransaction = try signer.sign(
            AppTransaction(
                receiptType: .sandbox, appAppleId: TestPKI.appAppleId, bundleId: TestPKI.bundleId, applicationVersion: "1",
                receiptCreationDate: Date(), originalPurchaseDate: Date(), originalApplicationVersion: "1"))
        let appReport = try await InspectionPlan(input: appTransaction, options: trusting).run()
        #expect(appReport.appTransaction?.bundleId == TestPKI.bundleId)
    }

    @Test("rejections carry the verifier's code; the test CA never passes for Production")
    func rejections() async throws {
        var production = trusting
        production.environment = .production
        production.appAppleId = TestPKI.appAppleId
        let token = try TestPKI.notification(originalTransactionId: "5", environment: .production)
        do {
            _ = try await InspectionPlan(input: token, options: production).run()
            Issue.record("a test-CA token passed as Production")
        } catch {
            #expect(error.code.rawValue == "verification.untrusted_root")
            #expect(error.exitCode == 1)
        }
        var sandbox = trusting
        sandbox.environment = .sandbox
        do {
            _ = try await InspectionPlan(input: token, options: sandbox).run()
            Issue.record("a Production token passed as Sandbox")
        } catch {
            #expect(error.code.rawValue == "verification.wrong_environment")
        }
    }

    @Test("Production data that names no app Apple ID needs the flag")
    func productionNeedsAppAppleId() throws {
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .test, notificationUUID: "u",
            data: NotificationData(environment: .production, bundleId: TestPKI.bundleId), signedDate: Date())
        let token = try TestPKI.signer.sign(payload)
        do {
            _ = try InspectionPlan(input: token, options: trusting)
            Issue.record("planned without an app Apple ID")
        } catch {
            #expect(error.isUsage && error.exitCode == 2)
        }
    }
}
