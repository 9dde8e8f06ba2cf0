/// An enumeration of values Apple sends as JSON strings, open to values Apple adds later.
///
/// Apple extends its enumerations without notice (the notification docs already list subtypes the
/// official libraries lack). A value this code does not know decodes to `unknown(raw)` and encodes back
/// to the same raw string, so nothing fails to decode and nothing is lost when a model is re-published.
public protocol AppStoreStringEnumeration: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible
where RawValue == String {
    /// Every value this version of the code knows, in Apple's documented order.
    static var knownValues: [Self] { get }
    /// A value this version of the code does not know, kept verbatim.
    static func unknown(_ rawValue: String) -> Self
    /// The exact string Apple sends.
    var rawValue: String { get }
}

extension AppStoreStringEnumeration {
    /// Maps Apple's raw string to a known case, or to `unknown(raw)`; never fails.
    public init(rawValue: String) {
        self = Self.resolve(rawValue)
    }

    private static func resolve(_ rawValue: String) -> Self {
        knownValues.first { $0.rawValue == rawValue } ?? unknown(rawValue)
    }

    /// Whether the value is one this version of the code knows.
    public var isKnown: Bool { Self.knownValues.contains(self) }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = Self.resolve(try container.decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// An enumeration of values Apple sends as JSON integers, open to values Apple adds later.
///
/// Same contract as ``AppStoreStringEnumeration``: unknown numbers decode to `unknown(raw)` and
/// re-encode to the same number.
public protocol AppStoreIntegerEnumeration: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible
where RawValue == Int {
    /// Every value this version of the code knows, in Apple's documented order.
    static var knownValues: [Self] { get }
    /// A value this version of the code does not know, kept verbatim.
    static func unknown(_ rawValue: Int) -> Self
    /// The exact number Apple sends.
    var rawValue: Int { get }
}

extension AppStoreIntegerEnumeration {
    /// Maps Apple's raw number to a known case, or to `unknown(raw)`; never fails.
    public init(rawValue: Int) {
        self = Self.resolve(rawValue)
    }

    private static func resolve(_ rawValue: Int) -> Self {
        knownValues.first { $0.rawValue == rawValue } ?? unknown(rawValue)
    }

    /// Whether the value is one this version of the code knows.
    public var isKnown: Bool { Self.knownValues.contains(self) }

    public var description: String { String(rawValue) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = Self.resolve(try container.decode(Int.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
