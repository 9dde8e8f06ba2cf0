import Foundation

/// A date as this module writes it, Apple's convention for every JSON body of the project:
/// milliseconds since 1970, whole when the date falls on one (within a microsecond), fractional
/// otherwise (Xcode-signed data). ``StreamingJSONEncoder`` writes dates this way, and a Foundation
/// `JSONEncoder` that must produce the same text uses it as its date strategy.
public enum EncodedMilliseconds: Equatable, Sendable {
    case whole(Int64)
    case fractional(Double)

    public init(_ date: Date) {
        let milliseconds = date.timeIntervalSince1970 * 1000
        let rounded = milliseconds.rounded()
        if abs(milliseconds - rounded) < 0.001, let whole = Int64(exactly: rounded) {
            self = .whole(whole)
        } else {
            self = .fractional(milliseconds)
        }
    }
}

extension EncodedMilliseconds {
    /// Foundation's `JSONEncoder` writing dates by this rule, so its output matches
    /// ``StreamingJSONEncoder``'s (the App Store coder pair and the encoder's tests use it).
    public static let foundationDateStrategy: JSONEncoder.DateEncodingStrategy = .custom { date, encoder in
        var container = encoder.singleValueContainer()
        switch EncodedMilliseconds(date) {
        case .whole(let milliseconds): try container.encode(milliseconds)
        case .fractional(let milliseconds): try container.encode(milliseconds)
        }
    }
}
