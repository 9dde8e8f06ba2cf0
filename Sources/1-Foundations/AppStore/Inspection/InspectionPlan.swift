import Foundation
import X509

/// One `appstorectl inspect` run, decided before anything is verified: which token, what kind,
/// which app it is checked against and which of those values were assumed from the token itself.
///
/// Split from ``run()`` so the tool can print its assumptions even when verification then fails.
public struct InspectionPlan: Sendable {
    /// The compact JWS to verify.
    public let token: String
    /// The JSON field the token came from, when the input was a body.
    public let inputField: String?
    /// The kind detected from the payload's keys.
    public let kind: SignedDataKind
    /// The app the token is checked against.
    public let app: AppStoreApp
    /// Human lines saying which values were taken from the token's own claims.
    public let assumptions: [String]
    let options: InspectOptions
    let certificates: [Certificate?]
    let assumedNames: [String]
    let renewalBundleId: String?

    /// A bundle ID standing in when the token names none: the verifier then rejects it for that
    /// (renewal info names no app, and is checked for its environment only).
    static let unnamedBundleId = "(unnamed)"

    /// Reads `input` and decides the checks.
    /// - Throws: ``InspectFailure``: `verification.malformed` when the input holds no App Store JWS; usage when a
    ///   Production check needs an app Apple ID that neither the flags nor the token give.
    public init(input: String, options: InspectOptions) throws(InspectFailure) {
        let (token, field) = try InspectInput.extract(from: input)
        let inspected: InspectedJWS
        do {
            inspected = try InspectedJWS(token)
        } catch {
            throw .rejected(error)
        }
        guard let kind = inspected.kind else {
            throw .rejected(AppStoreVerificationError(.malformed, "the payload is not a known kind of App Store signed data"))
        }
        let claims = TokenClaims(kind: kind, payload: inspected.payload)
        var notes: [String] = []
        var assumed: [String] = []

        var bundleId = options.bundleId
        if bundleId == nil, let claimed = claims.bundleId {
            bundleId = claimed
            assumed.append("bundleId")
            notes.append("assuming bundle ID \(claimed) from the token (pass --bundle-id to check it)")
        }
        if bundleId == nil {
            notes.append(
                kind == .renewalInfo
                    ? "renewal info names no app: only its environment is checked (pass --bundle-id to use that app's environments)"
                    : "the token names no bundle ID")
        }
        var environment = options.environment
        if environment == nil, let claimed = claims.environment {
            environment = claimed
            assumed.append("environment")
            notes.append("assuming environment \(claimed.rawValue) from the token (pass --environment to check it)")
        }
        if environment == nil {
            environment = .sandbox
            notes.append("the token names no environment; checking against Sandbox")
        }
        var appAppleId = options.appAppleId
        if appAppleId == nil, let claimed = claims.appAppleId {
            appAppleId = claimed
            assumed.append("appAppleId")
            notes.append("assuming app Apple ID \(claimed) from the token (pass --app-apple-id to check it)")
        }
        let checksAppAppleId = kind == .notification || kind == .appTransaction
        if environment == .production, appAppleId == nil {
            guard !checksAppAppleId else {
                throw .usage("--app-apple-id is required: this Production \(kind.rawValue) does not name its app Apple ID")
            }
            // Transactions and renewal info carry no app Apple ID, and the verifier compares none.
            appAppleId = 0
        }
        if !assumed.isEmpty {
            notes.append("values taken from the token prove only that Apple signed it, not that it belongs to your app")
        }
        let app: AppStoreApp
        do {
            app = try AppStoreApp(
                bundleId: bundleId ?? Self.unnamedBundleId, appAppleId: appAppleId,
                environments: [environment ?? .sandbox])
        } catch {
            throw .usage(error.message)
        }
        self.token = token
        self.inputField = field
        self.kind = kind
        self.app = app
        self.assumptions = notes
        self.options = options
        self.certificates = inspected.certificates
        self.assumedNames = assumed
        self.renewalBundleId = options.bundleId
    }

    /// Verifies the token (and every nested JWS) and decodes it.
    /// - Throws: ``InspectFailure`` with the verifier's code.
    public func run() async throws(InspectFailure) -> InspectionReport {
        let verifier: SignedDataVerifier
        do {
            verifier = try SignedDataVerifier(
                configuration: .init(
                    apps: [app], additionalTrustedRoots: options.trustedRoots, validationTime: options.validationTime,
                    revocationChecking: options.revocationChecking, chainCache: .disabled))
        } catch {
            throw .usage(error.message)
        }
        var report = InspectionReport(
            kind: kind, inputField: inputField,
            checkedAgainst: .init(
                bundleId: app.bundleId == Self.unnamedBundleId ? nil : app.bundleId,
                appAppleId: app.appAppleId == 0 ? nil : app.appAppleId,
                environment: app.environments.first?.rawValue ?? "",
                validationTime: options.revocationChecking == nil ? ValidationTimeOption.describe(options.validationTime) : "now",
                revocationChecked: options.revocationChecking != nil,
                additionalTrustedRoots: options.trustedRoots.map { String(describing: $0.subject) },
                assumedFromToken: assumedNames),
            certificates: certificates.compactMap { $0.map(InspectionReport.CertificateSummary.init) })
        do {
            switch kind {
            case .notification:
                report.notification = try await verifier.verifyNotification(signedPayload: token)
            case .transaction:
                report.transaction = try await verifier.verifyTransaction(token)
            case .renewalInfo:
                report.renewalInfo = try await verifier.verifyRenewalInfo(token, bundleId: renewalBundleId)
            case .appTransaction:
                report.appTransaction = try await verifier.verifyAppTransaction(token)
            }
        } catch {
            throw .rejected(error)
        }
        return report
    }
}
