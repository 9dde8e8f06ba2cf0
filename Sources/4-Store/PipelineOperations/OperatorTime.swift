import Foundation
import PipelineRecords

/// The one way `appstorectl` reads a point in time (`replay --from`, `backfill --since/--until`):
/// an ISO 8601 time, or an age before now.
public enum OperatorTime {
    public static let syntax = "an ISO 8601 time (2026-11-21T10:00:00Z) or an age: 90m, 36h, 7d (also 30s)"

    /// An ISO 8601 time (with or without fractional seconds), or a duration before `now`: a
    /// non-negative number followed by `s`, `m`, `h` or `d` (`90m`, `36h`, `7d`, `1.5h`).
    public static func parse(_ text: String, now: Date = Date()) -> Date? {
        if let date = Timestamp.parse(text) { return date }
        guard let unit = text.last, let amount = Double(text.dropLast()), amount >= 0, amount.isFinite else { return nil }
        let seconds: Double
        switch unit {
        case "s": seconds = amount
        case "m": seconds = amount * 60
        case "h": seconds = amount * 3600
        case "d": seconds = amount * 86_400
        default: return nil
        }
        return now.addingTimeInterval(-seconds)
    }
}
