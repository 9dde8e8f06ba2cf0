import Foundation

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
