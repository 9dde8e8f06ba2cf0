import Foundation

/// ISO 8601 timestamps with milliseconds, UTC, as every header in the pipeline writes them.
public enum Timestamp {
    public static func iso8601(_ date: Date) -> String {
        withFraction.format(date)
    }

    /// A header's timestamp (`ingested-at`, …): with milliseconds as written, or without the
    /// fraction as another producer may write it; nil for anything else.
    public static func parse(_ text: String) -> Date? {
        (try? withFraction.parse(text)) ?? (try? withoutFraction.parse(text))
    }

    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let withoutFraction = Date.ISO8601FormatStyle()
}
