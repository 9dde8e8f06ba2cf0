import AppStore
import AppStoreSigning
import Foundation
import SwiftASN1
import VerifyService
import X509

/// Test signing material and signed sample data for the verify stage's tests.
enum TestCA {
    static let bundleID = "com.example.entitlements"
    static let otherBundleID = "com.example.other"
    static let appAppleID: Int64 = 1_234_567_890

    /// The authority every "valid" sample is signed by; configure its root as trusted.
    static let trusted: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Verify Tests"))
    /// An authority no verifier trusts: its samples are forgeries.
    static let untrusted: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Forger"))

    /// Now, in whole milliseconds (Apple's dates are).
    static func now() -> Date {
        AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: Date()))
    }

    static var signer: JWSSigner { try! trusted.makeSigner() }
    static var forger: JWSSigner { try! untrusted.makeSigner() }

    /// The stage configuration of the tests: one app in Sandbox and Production, the test root trusted.
    static func configuration(chainCache: ChainCachePolicy = .default) throws -> VerifyConfiguration {
        VerifyConfiguration(
            apps: [try AppStoreApp(bundleID: bundleID, appAppleID: appAppleID, environments: [.sandbox, .production])],
            additionalTrustedRoots: [trusted.root], chainCache: chainCache)
    }

    static func transaction(
        originalTransactionId: String, environment: AppStoreEnvironment = .sandbox, bundleID: String = bundleID,
        signedDate: Date = now()
    ) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: originalTransactionId, transactionId: "\(originalTransactionId)9",
            webOrderLineItemId: "2000000000000099", bundleId: bundleID, productId: "com.example.premium.monthly",
            subscriptionGroupIdentifier: "21000000", purchaseDate: signedDate.addingTimeInterval(-60),
            originalPurchaseDate: signedDate.addingTimeInterval(-86_400),
            expiresDate: signedDate.addingTimeInterval(30 * 86_400), quantity: 1, type: .autoRenewableSubscription,
            appAccountToken: UUID(uuidString: "7E3FB20B-4CDD-4A63-9B6C-1A2D5F1E0C11"), inAppOwnershipType: .purchased,
            signedDate: signedDate, environment: environment, storefront: "USA", storefrontId: "143441",
            transactionReason: .purchase, currency: "USD", price: 9990, appTransactionId: "704000000000000001")
    }

    static func renewalInfo(originalTransactionId: String, environment: AppStoreEnvironment = .sandbox, signedDate: Date = now())
        -> JWSRenewalInfoDecodedPayload
    {
        JWSRenewalInfoDecodedPayload(
            originalTransactionId: originalTransactionId, autoRenewProductId: "com.example.premium.monthly",
            productId: "com.example.premium.monthly", autoRenewStatus: .on, isInBillingRetryPeriod: false,
            signedDate: signedDate, environment: environment,
            recentSubscriptionStartDate: signedDate.addingTimeInterval(-86_400),
            renewalDate: signedDate.addingTimeInterval(30 * 86_400), currency: "USD", renewalPrice: 9990)
    }

    /// A signed `SUBSCRIBED/INITIAL_BUY` notification with nested transaction and renewal info.
    static func notification(
        originalTransactionId: String, uuid: String = UUID().uuidString.lowercased(), signer: JWSSigner = signer,
        nestedSigner: JWSSigner? = nil, environment: AppStoreEnvironment = .sandbox, bundleID: String = bundleID,
        signedDate: Date = now()
    ) throws -> String {
        let nested = nestedSigner ?? signer
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed, subtype: .initialBuy, notificationUUID: uuid,
            data: NotificationData(
                environment: environment, appAppleId: appAppleID, bundleId: bundleID, bundleVersion: "42",
                signedTransactionInfo: try nested.sign(transaction(
                    originalTransactionId: originalTransactionId, environment: environment, bundleID: bundleID,
                    signedDate: signedDate)),
                signedRenewalInfo: try nested.sign(renewalInfo(
                    originalTransactionId: originalTransactionId, environment: environment, signedDate: signedDate)),
                status: .active),
            version: "2.0", signedDate: signedDate)
        return try signer.sign(payload)
    }

    /// A signed `TEST` notification: no transaction, so keyed by its UUID.
    static func testNotification(uuid: String, signer: JWSSigner = signer, environment: AppStoreEnvironment = .sandbox) throws -> String {
        try signer.sign(ResponseBodyV2DecodedPayload(
            notificationType: .test, notificationUUID: uuid,
            data: NotificationData(environment: environment, bundleId: bundleID), version: "2.0", signedDate: now()))
    }

    /// A signed transaction on its own, as an app uploads it.
    static func signedTransaction(originalTransactionId: String, signer: JWSSigner = signer) throws -> String {
        try signer.sign(transaction(originalTransactionId: originalTransactionId))
    }

    /// `token` with its payload segment replaced by another token's: the signature no longer matches.
    static func tampered(_ token: String, payloadFrom other: String) -> String {
        let parts = token.split(separator: ".")
        let otherParts = other.split(separator: ".")
        return [parts[0], otherParts[1], parts[2]].joined(separator: ".")
    }

    static func webhookBody(_ signedPayload: String) -> [UInt8] {
        Array(#"{"signedPayload":"\#(signedPayload)"}"#.utf8)
    }

    static func uploadBody(_ signedTransaction: String, appAccountToken: String? = nil, userId: String? = nil) -> [UInt8] {
        var object: [String: String] = ["signedTransaction": signedTransaction]
        object["appAccountToken"] = appAccountToken
        object["userId"] = userId
        return Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Writes the trusted root as PEM (and DER) into a temporary directory; returns the paths.
    static func writeRoot(_ authority: SigningAuthority = trusted) throws -> (pem: String, der: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("verify-tests-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let pem = dir.appendingPathComponent("root.pem")
        let der = dir.appendingPathComponent("root.der")
        try Data(authority.root.serializeAsPEM().pemString.utf8).write(to: pem)
        try Data(authority.root.serializeAsPEM().derBytes).write(to: der)
        return (pem.path, der.path)
    }
}
