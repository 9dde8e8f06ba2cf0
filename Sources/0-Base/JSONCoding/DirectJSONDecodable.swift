import Foundation

/// A model read straight from the JSON bytes, without building a ``JSONTree`` or going through
/// `Codable`: in this project the App Store models the verifier decodes for every notification.
///
/// The direct reader is a shortcut, never a second opinion. It uses ``JSONParser``'s grammar for every
/// byte, keeps the first of repeated keys, skips (and validates) unknown members, and gives up with
/// ``DirectDecodingMiss`` on anything it does not decode exactly as ``JSONTreeDecoder`` would (a wrong
/// type, an inexact number, an escaped key); the caller then decodes the document the general
/// way (``JSONTree/decode(_:from:)``), which yields the value or the precise error. So both paths accept the same documents with
/// the same results; tests compare them over generated and real payloads.
public protocol DirectJSONDecodable: Decodable {
    /// Reads one object whose `{` is next, at nesting `depth` (1 for a top-level object).
    static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self
}

extension DirectJSONDecodable {
    /// The model, or `nil` when the document needs the general path.
    @inlinable
    public static func decodeDirectly(from bytes: [UInt8]) -> Self? {
        bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer)
            do {
                let value = try read(from: &parser, depth: 1)
                try parser.finish()
                return value
            } catch {
                return nil
            }
        }
    }
}

extension JSONParser {
    /// A nested model (or `null`) as the value of a member of an object at `depth`.
    @inlinable
    public mutating func readModel<T: DirectJSONDecodable>(_ type: T.Type, depth: Int) throws(Miss) -> T? {
        if try readNull() { return nil }
        return try T.read(from: &self, depth: depth + 1)
    }

    /// An array of nested models (no `null` elements) as the value of a member of an object at `depth`.
    @inlinable
    public mutating func readModels<T: DirectJSONDecodable>(_ type: T.Type, depth: Int) throws(Miss) -> [T]? {
        try readArray(depth: depth) { (parser) throws(Miss) -> T in try T.read(from: &parser, depth: depth + 2) }
    }

    /// A string naming a case of a strict enumeration: an unknown value fails its `Decodable`, so
    /// it takes the general path, which reports it.
    @inlinable
    public mutating func readCase<T: RawRepresentable>(_ type: T.Type) throws(Miss) -> T? where T.RawValue == String {
        guard let text = try readString() else { return nil }
        guard let value = T(rawValue: text) else { throw Miss() }
        return value
    }

    /// Reads the members of the object whose `{` is next: `member` is called with the field number of
    /// each first occurrence of a known key and must read its value; repeated and unknown keys are
    /// skipped (and so validated), as ``JSONTreeDecoder`` ignores them.
    @inlinable
    public mutating func readMembers(
        depth: Int,
        names: JSONFieldNames,
        _ member: (inout JSONParser, Int) throws(Miss) -> Void
    ) throws(Miss) {
        if try openObject(depth: depth) { return }
        var seen: UInt64 = 0
        repeat {
            let key = try memberKey()
            if let field = names.field(key), seen & (1 << field) == 0 {
                seen |= 1 << field
                try member(&self, field)
            } else {
                try skipValue(depth: depth)
            }
        } while try nextMember()
    }
}

/// The field names of a model as a `CaseIterable` enum in declaration order (the `Codable` keys).
public protocol DirectFields: CaseIterable, RawRepresentable where RawValue == Int {}

extension DirectFields {
    /// The names, numbered by raw value.
    public static func names() -> JSONFieldNames {
        precondition(allCases.count <= 64, "the seen-set is 64 bits")
        return JSONFieldNames(allCases.map { "\($0)" })
    }
}
