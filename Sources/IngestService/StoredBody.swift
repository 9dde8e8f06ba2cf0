import AppStore
import Foundation
import JSONCoding

/// The raw record's body, rebuilt by ingest from the fields it knows, so that nothing a client
/// adds (unknown fields, its own `userAuthentication`) reaches verify and grant. This is the wire
/// contract of `appstore.notifications.raw.v1`; keep the fields and their order:
///
/// - Apple's webhook: `{"signedPayload":"<JWS>"}`
/// - an app upload: `{"signedTransaction":"<JWS>","appAccountToken":"<UUID as sent>","userId":"…","userAuthentication":"jwt|hmac|none"}`,
///   `appAccountToken` and `userId` only when present.
///
/// The JWS strings are kept byte for byte (ingest checked they are base64url and dots, so they
/// need no escaping); every other string is escaped, so the body is valid JSON for any `userId`.
enum StoredBody {
    static func notification(signedPayload: String) -> [UInt8] {
        encode(Notification(signedPayload: signedPayload))
    }

    static func transaction(signedTransaction: String, appAccountToken: String?, userId: String?, authentication: UploadAuthMode) -> [UInt8] {
        encode(
            Upload(
                signedTransaction: signedTransaction, appAccountToken: appAccountToken, userId: userId,
                userAuthentication: authentication.rawValue))
    }

    // Members in declaration order (the encoder keeps it); nil optionals are left out.
    private struct Notification: Encodable {
        var signedPayload: String
    }

    private struct Upload: Encodable {
        var signedTransaction: String
        var appAccountToken: String?
        var userId: String?
        var userAuthentication: String
    }

    /// The project's JSON writer; a body of strings cannot fail to encode (it throws only for
    /// non-finite numbers and unencodable dates).
    private static func encode(_ body: some Encodable) -> [UInt8] {
        do {
            return try StreamingJSONEncoder.encode(body)
        } catch {
            preconditionFailure("a body of strings did not encode: \(error)")
        }
    }
}

/// `X-Request-Id` as ingest repeats it in headers, logs and answers: 1–128 of `A-Z a-z 0-9 . _ : -`.
/// Anything else (quotes, spaces, control characters, a megabyte) is replaced by a fresh UUID,
/// so a client cannot forge log lines or bloat every record.
enum RequestID {
    static func accepted(_ header: String?) -> String {
        if let header, isSafe(header) { return header }
        return UUID().uuidString.lowercased()
    }

    static func isSafe(_ value: String) -> Bool {
        (1...128).contains(value.utf8.count)
            && value.utf8.allSatisfy { b in
                switch b {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"),
                    UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }
}
