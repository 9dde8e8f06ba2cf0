import AppStore
import AppStoreSigning
import Foundation
import TestSupport
import Testing
import X509

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

/// `inspect --revocation-check`: the same OCSP checks as verify's, for support checking one token.
@Suite("inspection plans with revocation checks")
struct InspectionRevocationTests {
    @Test("with revocation checks a good chain verifies after asking the responder; a revoked leaf is refused; without, nothing is asked")
    func revocation() async throws {
        let authority = try SigningAuthority(options: SigningAuthorityOptions(ocspBaseURL: "http://ocsp.invalid"))
        let token = try TestPKI.notification(signer: authority.makeSigner(), signedDate: Date())
        func plan(_ transport: RecordingTransport?) throws -> InspectionPlan {
            try InspectionPlan(
                input: token,
                options: InspectOptions(
                    trustedRoots: [authority.root], revocationChecking: transport.map { RevocationChecking(transport: $0) }))
        }

        let good = RecordingTransport(mode: .answer(OCSPResponder(authority: authority)))
        let report = try await plan(good).run()
        #expect(report.checkedAgainst.revocationChecked && report.checkedAgainst.validationTime == "now")
        #expect(good.requests.count >= 2, "the leaf and the intermediate, for the notification and each JWS in it")

        let revoked = RecordingTransport(mode: .answer(OCSPResponder(authority: authority, revokedSerialNumbers: [authority.leaf.serialNumber])))
        let refused = try plan(revoked)
        do throws(InspectFailure) {
            _ = try await refused.run()
            Issue.record("a revoked leaf was accepted")
        } catch {
            #expect(error.code.rawValue == AppStoreVerificationError.Code.revoked.rawValue)
        }

        let offline = try await plan(nil).run()
        #expect(!offline.checkedAgainst.revocationChecked)
    }
}
