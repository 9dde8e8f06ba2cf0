import AppStore
import AppStoreSigning
import Foundation
import SwiftASN1
import X509

/// Test signing material and signed sample App Store data: authorities (a shared trusted one and a
/// forger, or a fresh one per test), verifiers trusting them, and Apple-shaped transactions, renewal
/// infos and notifications, with the request bodies ingest receives them in.
public enum TestPKI {
    public static let bundleId = "com.example.entitlements"
    public static let otherBundleId = "com.example.other"
    public static let appAppleId: Int64 = 1_234_567_890
    public static let productID = "com.example.premium.monthly"

    /// The authority the "valid" samples are signed by by default; trust its root.
    public static let trusted: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Test PKI"))
    /// An authority no verifier trusts: its samples are forgeries.
    public static let untrusted: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Forger"))

    public static var signer: JWSSigner { try! trusted.makeSigner() }
    public static var forger: JWSSigner { try! untrusted.makeSigner() }

    /// Now, in whole milliseconds (Apple's dates are, so values survive a round trip).
    public static func now() -> Date {
        AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: Date()))
    }

    /// A fresh authority.
    public static func authority(_ options: SigningAuthorityOptions = SigningAuthorityOptions()) throws -> SigningAuthority {
        try SigningAuthority(options: options)
    }

    /// The app most tests accept: Sandbox and Production.
    public static func app(
        bundleId: String = bundleId, appAppleId: Int64? = appAppleId, environments: Set<AppStoreEnvironment> = [.sandbox, .production]
    ) throws -> AppStoreApp {
        try AppStoreApp(bundleId: bundleId, appAppleId: appAppleId, environments: environments)
    }

    /// A verifier trusting `roots` (and Apple's root), by default for the Sandbox app.
    public static func verifier(
        trusting roots: [Certificate],
        apps: [AppStoreApp]? = nil,
        validationTime: SignedDataVerifier.ValidationTime = .signedDate,
        revocationChecking: RevocationChecking? = nil,
        chainCache: ChainCachePolicy = .default,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                apps: apps ?? [app(environments: [.sandbox])], additionalTrustedRoots: roots, validationTime: validationTime,
                revocationChecking: revocationChecking, chainCache: chainCache, clock: clock))
    }

    /// A monthly subscription's first purchase, signed at `signedDate`.
    public static func transaction(
        originalTransactionId: String = "2000000000000001", environment: AppStoreEnvironment = .sandbox,
        bundleId: String = bundleId, signedDate: Date = now()
    ) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: originalTransactionId, transactionId: "\(originalTransactionId)9",
            webOrderLineItemId: "2000000000000099", bundleId: bundleId, productId: productID,
            subscriptionGroupIdentifier: "21000000", purchaseDate: signedDate.addingTimeInterval(-60),
            originalPurchaseDate: signedDate.addingTimeInterval(-86_400),
            expiresDate: signedDate.addingTimeInterval(30 * 86_400), quantity: 1, type: .autoRenewableSubscription,
            appAccountToken: UUID(uuidString: "7E3FB20B-4CDD-4A63-9B6C-1A2D5F1E0C11"), inAppOwnershipType: .purchased,
            signedDate: signedDate, environment: environment, storefront: "USA", storefrontId: "143441",
            transactionReason: .purchase, currency: "USD", price: 9990, appTransactionId: "704000000000000001")
    }

    /// The renewal info of ``transaction(originalTransactionId:environment:bundleId:signedDate:)``: renewing.
    public static func renewalInfo(
        originalTransactionId: String = "2000000000000001", environment: AppStoreEnvironment = .sandbox, signedDate: Date = now()
    ) -> JWSRenewalInfoDecodedPayload {
        JWSRenewalInfoDecodedPayload(
            originalTransactionId: originalTransactionId, autoRenewProductId: productID, productId: productID,
            autoRenewStatus: .on, isInBillingRetryPeriod: false, signedDate: signedDate, environment: environment,
            recentSubscriptionStartDate: signedDate.addingTimeInterval(-86_400),
            renewalDate: signedDate.addingTimeInterval(30 * 86_400), currency: "USD", renewalPrice: 9990)
    }

    /// A signed `SUBSCRIBED/INITIAL_BUY` notification whose nested transaction and renewal info
    /// (by default those above) are signed by `nestedSigner` (default: the same signer).
    public static func notification(
        originalTransactionId: String = "2000000000000001", uuid: String = UUID().uuidString.lowercased(),
        signer: JWSSigner = signer, nestedSigner: JWSSigner? = nil, environment: AppStoreEnvironment = .sandbox,
        bundleId: String = bundleId, appAppleId: Int64? = appAppleId, signedDate: Date = now(),
        transaction: JWSTransactionDecodedPayload? = nil, renewalInfo: JWSRenewalInfoDecodedPayload? = nil
    ) throws -> String {
        let nested = nestedSigner ?? signer
        let transaction =
            transaction
            ?? Self.transaction(
                originalTransactionId: originalTransactionId, environment: environment, bundleId: bundleId, signedDate: signedDate)
        let renewal =
            renewalInfo
            ?? Self.renewalInfo(
                originalTransactionId: originalTransactionId, environment: environment, signedDate: signedDate)
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed, subtype: .initialBuy, notificationUUID: uuid,
            data: NotificationData(
                environment: environment, appAppleId: appAppleId, bundleId: bundleId, bundleVersion: "42",
                signedTransactionInfo: try nested.sign(transaction), signedRenewalInfo: try nested.sign(renewal), status: .active),
            version: "2.0", signedDate: signedDate)
        return try signer.sign(payload)
    }

    /// A signed `TEST` notification: no transaction.
    public static func testNotification(uuid: String, signer: JWSSigner = signer, environment: AppStoreEnvironment = .sandbox) throws -> String {
        try signer.sign(
            ResponseBodyV2DecodedPayload(
                notificationType: .test, notificationUUID: uuid,
                data: NotificationData(environment: environment, bundleId: bundleId), version: "2.0", signedDate: now()))
    }

    /// A signed transaction on its own, as an app uploads it.
    public static func signedTransaction(originalTransactionId: String, signer: JWSSigner = signer) throws -> String {
        try signer.sign(transaction(originalTransactionId: originalTransactionId))
    }

    /// `token` with its payload segment replaced by another token's: the signature no longer matches.
    public static func tampered(_ token: String, payloadFrom other: String) -> String {
        let parts = token.split(separator: ".")
        let otherParts = other.split(separator: ".")
        return [parts[0], otherParts[1], parts[2]].joined(separator: ".")
    }

    /// Apple's webhook body around `signedPayload`.
    public static func webhookBody(_ signedPayload: String) -> [UInt8] {
        Array(#"{"signedPayload":"\#(signedPayload)"}"#.utf8)
    }

    /// An app upload's body.
    public static func uploadBody(_ signedTransaction: String, appAccountToken: String? = nil, userId: String? = nil) -> [UInt8] {
        var object: [String: String] = ["signedTransaction": signedTransaction]
        object["appAccountToken"] = appAccountToken
        object["userId"] = userId
        return Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Writes `authority`'s root as PEM and DER into a fresh temporary directory; returns the paths.
    public static func writeRoot(_ authority: SigningAuthority = trusted) throws -> (pem: String, der: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("test-pki-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let pem = dir.appendingPathComponent("root.pem")
        let der = dir.appendingPathComponent("root.der")
        try Data(authority.root.serializeAsPEM().pemString.utf8).write(to: pem)
        try Data(authority.root.serializeAsPEM().derBytes).write(to: der)
        return (pem.path, der.path)
    }
}
