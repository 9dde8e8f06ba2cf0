import Foundation

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
        var writer = Writer()
        writer.field("signedPayload", signedPayload)
        return writer.finish()
    }

    static func transaction(signedTransaction: String, appAccountToken: String?, userId: String?, authentication: UploadAuthMode) -> [UInt8] {
        var writer = Writer()
        writer.field("signedTransaction", signedTransaction)
        if let appAccountToken { writer.field("appAccountToken", appAccountToken) }
        if let userId { writer.field("userId", userId) }
        writer.field("userAuthentication", authentication.rawValue)
        return writer.finish()
    }

    /// A JSON object of string fields, written in the order given.
    struct Writer {
        private var bytes: [UInt8] = [UInt8(ascii: "{")]

        mutating func field(_ name: String, _ value: String) {
            if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
            Self.appendString(name, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            Self.appendString(value, to: &bytes)
        }

        func finish() -> [UInt8] { bytes + [UInt8(ascii: "}")] }

        /// A JSON string literal (RFC 8259): `"` and `\` escaped, control characters as `\u00XX`,
        /// everything else as UTF-8.
        static func appendString(_ value: String, to bytes: inout [UInt8]) {
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(UInt8(ascii: "\""))
            for b in value.utf8 {
                switch b {
                case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case UInt8(ascii: "\r"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case UInt8(ascii: "\t"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 0..<0x20:
                    bytes += Array(#"\u00"#.utf8) + [hex[Int(b >> 4)], hex[Int(b & 0xf)]]
                default: bytes.append(b)
                }
            }
            bytes.append(UInt8(ascii: "\""))
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
