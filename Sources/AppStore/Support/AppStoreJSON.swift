import Foundation

/// The one JSON coder pair for everything Apple signs.
///
/// Apple writes every date as milliseconds since 1970 (Xcode-signed data even uses fractional
/// milliseconds). Sharing one configured pair keeps decoding (the verifier) and encoding (the verify
/// stage's output, the local signing authority) symmetric, so a model round-trips byte-stable.
/// Both coders are configured once and must not be reconfigured by callers.
public enum AppStoreJSON {
    /// Decodes Apple payloads: dates in milliseconds, unknown keys ignored (the default).
    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let milliseconds = try container.decode(Double.self)
            guard milliseconds.isFinite else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "date is not a finite number")
            }
            return Date(timeIntervalSince1970: milliseconds / 1000)
        }
        return decoder
    }()

    /// Encodes models the way Apple does: dates as whole milliseconds when they are whole, keys sorted
    /// so the output is deterministic, slashes unescaped.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            let milliseconds = date.timeIntervalSince1970 * 1000
            let rounded = milliseconds.rounded()
            if abs(milliseconds - rounded) < 0.001, let whole = Int64(exactly: rounded) {
                try container.encode(whole)
            } else {
                try container.encode(milliseconds)
            }
        }
        return encoder
    }()

    /// Milliseconds since 1970 for a date, as Apple writes it.
    public static func milliseconds(since1970 date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// The date for Apple's milliseconds since 1970.
    public static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
