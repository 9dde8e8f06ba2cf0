import AppStore
import Crypto
import Foundation
import JSONCoding

/// The raw topic's body (`appstore.notifications.raw.v1`): written by ingest and the recovery jobs,
/// read by verify. Nothing here is checked against Apple: the hints an app sends with an upload
/// are carried along as claims, with how ingest authenticated them (`userAuthentication`), for
/// grant to weigh.
///
/// - Apple's webhook: `{"signedPayload":"<JWS>"}`
/// - an app upload: `{"signedTransaction":"<JWS>","appAccountToken":"<customer UUID, lower-case>","userId":"…","userAuthentication":"jwt|hmac|none"}`,
///   `appAccountToken` and `userId` only when present.
/// - a StoreKit 1 receipt an app uploaded: `{"receipt":{"transactionId":"…","bundleId":"…","environment":"Sandbox"},…}`
///   with the upload's other fields; what ingest read from the receipt, to route the lookup.
public enum RawRecord: Hashable, Sendable {
    /// Apple's webhook envelope (also what notification history replays).
    case notification(signedPayload: String)
    /// An app upload.
    case transaction(signedTransaction: String, hints: AppUploadHints?)
    /// A StoreKit 1 receipt an app uploaded: nothing Apple signed, only what to look up.
    case receipt(ReceiptReference, hints: AppUploadHints?)

    /// What ingest read from a StoreKit 1 receipt (none of it trusted: it routes a lookup whose
    /// answers are verified). `bundleId` and `environment` only when the receipt says.
    public struct ReceiptReference: Codable, Hashable, Sendable {
        public var transactionId: String
        public var bundleId: String?
        public var environment: String?

        public init(transactionId: String, bundleId: String? = nil, environment: String? = nil) {
            self.transactionId = transactionId
            self.bundleId = bundleId
            self.environment = environment
        }

        /// The shape rule shared by ingest (which answers 400) and verify (which dead-letters):
        /// Apple's transaction IDs are 1 to 20 decimal digits.
        public static func isValidTransactionId(_ id: String) -> Bool {
            !id.isEmpty && id.utf8.count <= 20 && id.utf8.allSatisfy { (0x30...0x39).contains($0) }
        }
    }

    /// Why a raw body cannot be read; verify dead-letters it as malformed with this message.
    public struct ReadError: Error, Hashable, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Reads a raw body.
    /// - Parameter source: the record's `source` header; an `app-upload` must carry `signedTransaction`.
    /// - Throws: ``ReadError`` when the body is not a JSON object with exactly one of
    ///   `signedPayload` (a string) or `signedTransaction` (a string), or a hint breaks its rule.
    public static func parse(_ body: [UInt8], source: String?) throws(ReadError) -> RawRecord {
        let envelope: Envelope
        do {
            envelope = try AppStoreJSON.decode(Envelope.self, from: body)
        } catch {
            throw ReadError(message: "the raw body is not a JSON object with string signedPayload or signedTransaction")
        }
        if source == PipelineHeader.Source.appReceipt {
            guard envelope.signedPayload == nil, envelope.signedTransaction == nil, let receipt = envelope.receipt else {
                throw ReadError(message: "an app receipt must carry receipt, and neither signedPayload nor signedTransaction")
            }
            return .receipt(receipt, hints: try hints(envelope))
        }
        guard envelope.receipt == nil else { throw ReadError(message: "only an app-receipt record carries receipt") }
        switch (envelope.signedPayload, envelope.signedTransaction) {
        case (let payload?, nil):
            guard source != PipelineHeader.Source.appUpload else {
                throw ReadError(message: "an app upload must carry signedTransaction, not signedPayload")
            }
            return .notification(signedPayload: payload)
        case (nil, let transaction?):
            return .transaction(signedTransaction: transaction, hints: try hints(envelope))
        case (.some, .some):
            throw ReadError(message: "the raw body carries both signedPayload and signedTransaction")
        case (nil, nil):
            let wanted = source == PipelineHeader.Source.appUpload ? "signedTransaction" : "signedPayload"
            throw ReadError(message: "the raw body has no \(wanted)")
        }
    }

    private static func hints(_ envelope: Envelope) throws(ReadError) -> AppUploadHints? {
        var token: UUID?
        if let text = envelope.appAccountToken {
            guard let parsed = AppUploadHints.appAccountToken(from: text) else {
                throw ReadError(message: "appAccountToken is not a UUID")
            }
            token = parsed
        }
        if let user = envelope.userId, !AppUploadHints.isValidUserId(user) {
            throw ReadError(
                message: "userId must be a non-empty string of at most \(AppUploadHints.maximumUserIdBytes) bytes without control characters")
        }
        var authentication: UploadAuthentication?
        if let text = envelope.userAuthentication {
            guard let parsed = UploadAuthentication(rawValue: text) else {
                throw ReadError(message: "userAuthentication is not one of \(UploadAuthentication.allCases.map(\.rawValue))")
            }
            authentication = parsed
        }
        guard token != nil || envelope.userId != nil else { return nil }
        return AppUploadHints(appAccountToken: token, userId: envelope.userId, authentication: authentication)
    }

    private struct Envelope: Decodable {
        var signedPayload: String?
        var signedTransaction: String?
        var receipt: ReceiptReference?
        var appAccountToken: String?
        var userId: String?
        var userAuthentication: String?
    }
}

// MARK: - Writing

extension RawRecord {
    /// Apple's envelope `{"signedPayload":"<JWS>"}`.
    public static func notificationBody(signedPayload: String) -> [UInt8] {
        encode(NotificationBody(signedPayload: signedPayload))
    }

    /// An upload's body rebuilt from the fields ingest knows, so nothing a client adds (unknown
    /// fields, its own `userAuthentication`) reaches verify and grant. `appAccountToken` is kept as
    /// sent (its case too), so the same upload always makes the same bytes and key.
    public static func uploadBody(
        signedTransaction: String, appAccountToken: String?, userId: String?, authentication: UploadAuthentication
    ) -> [UInt8] {
        encode(
            UploadBody(
                signedTransaction: signedTransaction, appAccountToken: appAccountToken, userId: userId,
                userAuthentication: authentication.rawValue))
    }

    /// A receipt upload's body: what ingest read from the receipt (not the receipt itself) and the
    /// upload's fields, rebuilt like ``uploadBody(signedTransaction:appAccountToken:userId:authentication:)``.
    public static func receiptBody(
        _ receipt: ReceiptReference, appAccountToken: String?, userId: String?, authentication: UploadAuthentication
    ) -> [UInt8] {
        encode(
            ReceiptBody(receipt: receipt, appAccountToken: appAccountToken, userId: userId, userAuthentication: authentication.rawValue))
    }

    /// The raw record's key: the hex SHA-256 of its body, so a redelivered body lands on the same
    /// partition.
    public static func key(of body: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in SHA256.hash(data: body) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    // Members in declaration order (the encoder keeps it); nil optionals are left out.
    private struct NotificationBody: Encodable {
        var signedPayload: String
    }

    private struct ReceiptBody: Encodable {
        var receipt: ReceiptReference
        var appAccountToken: String?
        var userId: String?
        var userAuthentication: String
    }

    private struct UploadBody: Encodable {
        var signedTransaction: String
        var appAccountToken: String?
        var userId: String?
        var userAuthentication: String
    }

    /// The project's JSON writer; a body of strings cannot fail to encode (it throws only for
    /// non-finite numbers and unencodable dates). JWS strings are base64url and dots, so they are
    /// kept byte for byte; every other string is escaped, so the body is valid JSON for any `userId`.
    private static func encode(_ body: some Encodable) -> [UInt8] {
        do {
            return try StreamingJSONEncoder.encode(body)
        } catch {
            preconditionFailure("a body of strings did not encode: \(error)")
        }
    }
}
