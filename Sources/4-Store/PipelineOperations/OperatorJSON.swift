import Foundation
import PipelineRecords

/// The one JSON form of every `appstorectl … --json` answer: one object, keys sorted, times as
/// ISO 8601 UTC strings with milliseconds (`2026-11-21T07:00:00.123Z`), absent values as `null`.
public enum OperatorJSON {
    public static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.iso8601(date))
        }
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// Encodes an optional as `null` rather than leaving the key out, so every documented key is
/// always present.
extension KeyedEncodingContainer {
    public mutating func encodeAlways<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}

/// Encodable through its stored properties, by name, with `nil` written as `null` instead of
/// the key being left out: every documented key of a `--json` answer is always there.
public protocol OperatorJSONObject: Encodable {}

extension OperatorJSONObject {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: OperatorJSONKey.self)
        for child in Mirror(reflecting: self).children {
            guard let label = child.label else { continue }
            let key = OperatorJSONKey(stringValue: label)
            if let optional = child.value as? any OperatorJSONOptional, optional.isNone {
                try container.encodeNil(forKey: key)
            } else if let value = child.value as? any Encodable {
                try container.encode(value, forKey: key)
            }
        }
    }
}

public struct OperatorJSONKey: CodingKey {
    public var stringValue: String
    public var intValue: Int? { nil }
    public init(stringValue: String) { self.stringValue = stringValue }
    public init?(intValue: Int) { nil }
}

protocol OperatorJSONOptional { var isNone: Bool { get } }
extension Optional: OperatorJSONOptional {
    var isNone: Bool { self == nil }
}
