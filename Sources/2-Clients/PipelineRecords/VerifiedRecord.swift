import AppStore
import Foundation
import JSONCoding

/// The body of a verified-topic record (`appstore.notifications.verified.v1`, schema
/// `schemas/verified.v1.schema.json`): signed App Store data after every JWS in it passed
/// verification, decoded, with the original JWS kept for audit.
///
/// One shape for both ways a purchase reaches the pipeline, so enrich and grant handle a webhook
/// notification and an app upload alike: a notification fills ``notification`` and ``signedPayload``;
/// an app upload fills only ``transaction``, ``signedTransaction`` and the app's ``hints``.
public struct VerifiedRecord: Codable, Hashable, Sendable {
    /// What was verified.
    public enum Kind: String, Codable, Hashable, Sendable {
        /// An App Store Server Notification V2.
        case notification
        /// A signed transaction on its own (an app upload).
        case transaction
    }

    /// What was verified.
    public var kind: Kind
    /// Where it entered the pipeline (the `source` header): `apple-webhook`, `app-upload`, …
    public var source: String
    /// The environment the checks accepted.
    public var environment: AppStoreEnvironment
    /// The bundle ID the checks accepted.
    public var bundleId: String
    /// The configured app Apple ID of that app, when configured.
    public var appAppleId: Int64?
    /// The purchase this record is about, when it names one: the partition key.
    public var originalTransactionId: String?
    /// The transaction's own identifier, when there is a transaction.
    public var transactionId: String?
    /// The notification's deduplication key (notifications only).
    public var notificationUUID: String?
    /// The decoded notification; its nested JWS strings are kept as received.
    public var notification: ResponseBodyV2DecodedPayload?
    /// The verified transaction (a notification's `signedTransactionInfo`, or the upload).
    public var transaction: JWSTransactionDecodedPayload?
    /// The verified renewal info of a notification.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    /// The verified app transaction of a notification (`RESCIND_CONSENT`).
    public var appTransaction: AppTransaction?
    /// What the app claimed with an upload (unverified).
    public var hints: AppUploadHints?
    /// The notification's JWS exactly as received, for audit.
    public var signedPayload: String?
    /// The uploaded transaction's JWS exactly as received, for audit.
    public var signedTransaction: String?
    /// When verify accepted it.
    public var verifiedAt: Date

    public init(
        kind: Kind, source: String, environment: AppStoreEnvironment, bundleId: String, appAppleId: Int64? = nil,
        originalTransactionId: String? = nil, transactionId: String? = nil, notificationUUID: String? = nil,
        notification: ResponseBodyV2DecodedPayload? = nil, transaction: JWSTransactionDecodedPayload? = nil,
        renewalInfo: JWSRenewalInfoDecodedPayload? = nil, appTransaction: AppTransaction? = nil,
        hints: AppUploadHints? = nil, signedPayload: String? = nil, signedTransaction: String? = nil,
        verifiedAt: Date
    ) {
        self.kind = kind
        self.source = source
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.notificationUUID = notificationUUID
        self.notification = notification
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
        self.hints = hints
        self.signedPayload = signedPayload
        self.signedTransaction = signedTransaction
        self.verifiedAt = verifiedAt
    }

    /// A verified notification as a record.
    public init(notification verified: VerifiedNotification, signedPayload: String, source: String, verifiedAt: Date) {
        self.init(
            kind: .notification, source: source, environment: verified.environment, bundleId: verified.bundleId,
            appAppleId: verified.appAppleId,
            originalTransactionId: verified.transaction?.originalTransactionId ?? verified.renewalInfo?.originalTransactionId,
            transactionId: verified.transaction?.transactionId,
            notificationUUID: verified.payload.notificationUUID,
            notification: verified.payload, transaction: verified.transaction, renewalInfo: verified.renewalInfo,
            appTransaction: verified.appTransaction, signedPayload: signedPayload, verifiedAt: verifiedAt)
    }

    /// The record's partition key: `<environment>:<originalTransactionId>`, or
    /// `<environment>:notification:<notificationUUID>` for a notification without a purchase (`TEST`,
    /// renewal-extension summaries, consent and external-purchase events), or
    /// `<environment>:transaction:<transactionId>` for a receipt's transaction not looked up yet;
    /// `nil` when it has none of them.
    public var key: String? {
        if let originalTransactionId, !originalTransactionId.isEmpty {
            return "\(environment.rawValue):\(originalTransactionId)"
        }
        if kind == .transaction, transaction == nil, let transactionId, !transactionId.isEmpty {
            return "\(environment.rawValue):transaction:\(transactionId)"
        }
        if let notificationUUID, !notificationUUID.isEmpty {
            return "\(environment.rawValue):notification:\(notificationUUID)"
        }
        return nil
    }

    /// The JSON body as published, by ``StreamingJSONEncoder`` (dates in milliseconds, members in
    /// declaration order): one pass, where Foundation's encoder built and sorted a tree per record.
    public func encoded() throws -> [UInt8] {
        try StreamingJSONEncoder.encode(self)
    }

    /// Decodes a published body with the project's decoder (strict RFC 8259, direct readers for
    /// Apple's models inside), which costs a fraction of Foundation's on every record a stage reads.
    public static func decode(_ bytes: some Collection<UInt8>) throws -> VerifiedRecord {
        try AppStoreJSON.decode(VerifiedRecord.self, from: Array(bytes))
    }
}
