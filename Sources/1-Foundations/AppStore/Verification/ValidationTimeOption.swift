import Foundation

/// The spellings of a verifier's validation time on the command line and in the environment:
/// `signed-date` (the default: what replays need, as Apple's leaves expire), `now`, or an ISO 8601
/// date-time with a zone (`2025-10-01T00:00:00Z`).
public enum ValidationTimeOption {
    /// The accepted spellings, for help texts.
    public static let syntax = "signed-date, now or an ISO 8601 date-time (2025-10-01T00:00:00Z)"

    /// Parses a spelling; `nil` when it is none of them.
    public static func parse(_ text: String) -> SignedDataVerifier.ValidationTime? {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "signed-date", "signeddate", "signed_date": return .signedDate
        case "now", "current", "current-time": return .currentTime
        default: return date(text.trimmingCharacters(in: .whitespaces)).map { .fixed($0) }
        }
    }

    /// An ISO 8601 date-time with a zone, with or without fractional seconds.
    static func date(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }

    /// The spelling of a validation time (for logs and reports).
    public static func describe(_ time: SignedDataVerifier.ValidationTime) -> String {
        switch time {
        case .signedDate: "signed-date"
        case .currentTime: "now"
        case .fixed(let date): Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
        }
    }
}
