import AppStore
import Foundation
import PipelineRecords

/// The checks ingest makes before storing a body. It verifies no signature (that is verify's
/// job): it refuses what can never be a notification or a signed transaction, and keeps the
/// known fields, from which ingest rebuilds the stored body (``RawRecord/uploadBody(signedTransaction:appAccountToken:userId:authentication:)``).
enum RequestValidation {
    /// Apple's `{"signedPayload":"<JWS>"}`, once accepted.
    struct Notification {
        var signedPayload: String
    }

    /// The app's `{"signedTransaction":"<JWS>","appAccountToken":"<UUID>","userId":"…"}`, once accepted.
    struct Transaction {
        var signedTransaction: String
        var hints: Hints
    }

    /// The app's `{"appReceipt":"<base64>"}` or `{"transactionReceipt":"<base64>"}` (StoreKit 1),
    /// with the upload's optional fields, once read: the transaction it names and where it says it is from.
    struct Receipt {
        var reference: RawRecord.ReceiptReference
        var hints: Hints
    }

    /// What an upload (of a transaction or a receipt) says about its buyer, checked.
    struct Hints {
        /// As sent, when present and not null; ingest stores the customer it resolves (``UploadIdentity``).
        var appAccountToken: String?
        /// The body's user, when present and not null: stored with hmac and none, replaced by
        /// the token's claim with jwt.
        var userId: String?
    }

    static func receipt(_ body: [UInt8]) throws(IngestError) -> Receipt {
        let object = try jsonObject(body)
        let contents: LegacyReceipt.Contents
        do {
            switch (object["appReceipt"], object["transactionReceipt"]) {
            case (let app as String, nil): contents = try LegacyReceipt.read(appReceipt: app)
            case (nil, let transaction as String): contents = try LegacyReceipt.read(transactionReceipt: transaction)
            case (nil, nil): throw IngestError.missingField("appReceipt")
            default: throw IngestError.invalidField("appReceipt", "and transactionReceipt: send exactly one, as a string")
            }
        } catch let error as LegacyReceiptError {
            throw IngestError.receipt(error)
        } catch let error as IngestError {
            throw error
        } catch {
            throw IngestError.invalidJSON()
        }
        guard let id = contents.transactionId else { throw IngestError.receiptWithoutPurchase() }
        guard RawRecord.ReceiptReference.isValidTransactionId(id) else {
            throw IngestError.receiptTransactionNotNumeric()
        }
        return Receipt(
            reference: RawRecord.ReceiptReference(transactionId: id, bundleId: contents.bundleId, environment: contents.environment?.rawValue),
            hints: try hints(object))
    }

    static func notification(_ body: [UInt8], maxJWSBytes: Int) throws(IngestError) -> Notification {
        let object = try jsonObject(body)
        return Notification(signedPayload: try checkJWS(object["signedPayload"], name: "signedPayload", maxBytes: maxJWSBytes))
    }

    static func transaction(_ body: [UInt8], maxJWSBytes: Int) throws(IngestError) -> Transaction {
        let object = try jsonObject(body)
        let jws = try checkJWS(object["signedTransaction"], name: "signedTransaction", maxBytes: maxJWSBytes)
        return Transaction(signedTransaction: jws, hints: try hints(object))
    }

    /// The upload's `appAccountToken` and `userId`, checked.
    static func hints(_ object: [String: Any]) throws(IngestError) -> Hints {
        var accepted = Hints()
        if let token = object["appAccountToken"], !(token is NSNull) {
            guard let s = token as? String, AppUploadHints.appAccountToken(from: s) != nil else {
                throw .invalidField("appAccountToken", "must be a UUID string")
            }
            accepted.appAccountToken = s
        }
        if let user = object["userId"], !(user is NSNull) {
            guard let s = user as? String, AppUploadHints.isValidUserId(s) else {
                throw .invalidField(
                    "userId", "must be a non-empty string of at most \(AppUploadHints.maximumUserIdBytes) bytes without control characters")
            }
            accepted.userId = s
        }
        return accepted
    }

    static func jsonObject(_ body: [UInt8]) throws(IngestError) -> [String: Any] {
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(body)), let object = parsed as? [String: Any] else {
            throw .invalidJSON()
        }
        return object
    }

    /// Three non-empty base64url segments (`A-Z a-z 0-9 - _`, no padding) joined by dots; returns the JWS.
    @discardableResult
    static func checkJWS(_ value: Any?, name: String, maxBytes: Int) throws(IngestError) -> String {
        guard var jws = value as? String else { throw .missingField(name) }
        guard jws.utf8.count <= maxBytes else { throw .jwsTooLarge(name, limit: maxBytes) }
        jws.makeContiguousUTF8()
        let result: IngestError? = jws.utf8.withContiguousStorageIfAvailable { checkSegments($0, name: name) } ?? nil
        if let result { throw result }
        return jws
    }

    private static func checkSegments(_ bytes: UnsafeBufferPointer<UInt8>, name: String) -> IngestError? {
        var segments = 1
        var segmentLength = 0
        for b in bytes {
            switch b {
            case UInt8(ascii: "."):
                guard segmentLength > 0 else { return .invalidJWS(name, "a segment is empty") }
                segments += 1
                segmentLength = 0
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                segmentLength += 1
            default:
                return .invalidJWS(name, "it contains a character outside base64url")
            }
        }
        guard segments == 3 else { return .invalidJWS(name, "it has \(segments) segments instead of 3") }
        guard segmentLength > 0 else { return .invalidJWS(name, "a segment is empty") }
        return nil
    }
}
