import Foundation

/// Why a direct model decoder gave up: the document needs the general `Codable` path, which then
/// either decodes it or reports the precise error. Never shown to callers.
public struct DirectDecodingMiss: Error {
    @inlinable public init() {}
}

/// Typed reads on top of ``JSONParser`` for the direct model decoders (``DirectJSONDecodable``).
///
/// Every read goes through the parser's own grammar (strings, numbers, literals, whitespace, depth),
/// so a document read here is one ``JSONTree/parse(_:)`` accepts. A read throws
/// ``DirectDecodingMiss`` for anything it does not handle exactly like ``JSONTreeDecoder`` — a
/// wrong type, an inexact number, an escaped or non-ASCII key — and the caller falls back to it.
extension JSONParser {
    public typealias Miss = DirectDecodingMiss

    /// Consumes `{` at `depth` (the object's own depth, as ``JSONParser/object(depth:)`` counts it).
    /// - Returns: `true` when the object is empty (its `}` consumed too).
    @inlinable
    mutating func openObject(depth: Int) throws(Miss) -> Bool {
        skipWhitespace()
        guard depth <= JSONTree.maximumDepth, index < buffer.count, buffer[index] == UInt8(ascii: "{") else {
            throw Miss()
        }
        index += 1
        skipWhitespace()
        guard index < buffer.count, buffer[index] == UInt8(ascii: "}") else { return false }
        index += 1
        return true
    }

    /// The next member's key as raw bytes, with the `:` after it consumed. Only printable ASCII keys
    /// without escapes are read: for them raw bytes compare exactly as `String`s do.
    @inlinable
    mutating func memberKey() throws(Miss) -> UnsafeBufferPointer<UInt8> {
        skipWhitespace()
        guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else { throw Miss() }
        let start = index + 1
        var end = start
        while end < buffer.count {
            let byte = buffer[end]
            if byte == UInt8(ascii: "\"") { break }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { throw Miss() }
            end += 1
        }
        guard end < buffer.count else { throw Miss() }
        index = end + 1
        skipWhitespace()
        guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { throw Miss() }
        index += 1
        return UnsafeBufferPointer(rebasing: buffer[start..<end])
    }

    /// Consumes the `,` (`true`: another member follows) or `}` (`false`) after a member.
    @inlinable
    mutating func nextMember() throws(Miss) -> Bool {
        skipWhitespace()
        guard index < buffer.count else { throw Miss() }
        switch buffer[index] {
        case UInt8(ascii: ","):
            index += 1
            return true
        case UInt8(ascii: "}"):
            index += 1
            return false
        default:
            throw Miss()
        }
    }

    /// Checks that only whitespace follows the top-level value.
    @inlinable
    mutating func finish() throws(Miss) {
        skipWhitespace()
        guard index == buffer.count else { throw Miss() }
    }

    /// Skips (and so validates) a value nobody reads, at the depth of its containing object.
    @inlinable
    mutating func skipValue(depth: Int) throws(Miss) {
        do { _ = try value(depth: depth) } catch { throw Miss() }
    }

    /// Consumes `null` if it is the next value; otherwise leaves the value unread (`index` at its
    /// first byte).
    @inlinable
    mutating func readNull() throws(Miss) -> Bool {
        skipWhitespace()
        guard index < buffer.count else { throw Miss() }
        guard buffer[index] == UInt8(ascii: "n") else { return false }
        do { try literal("null") } catch { throw Miss() }
        return true
    }

    @inlinable
    public mutating func readString() throws(Miss) -> String? {
        if try readNull() { return nil }
        guard buffer[index] == UInt8(ascii: "\"") else { throw Miss() }
        do { return try string() } catch { throw Miss() }
    }

    @inlinable
    public mutating func readBool() throws(Miss) -> Bool? {
        if try readNull() { return nil }
        do {
            switch buffer[index] {
            case UInt8(ascii: "t"):
                try literal("true")
                return true
            case UInt8(ascii: "f"):
                try literal("false")
                return false
            default:
                throw Miss()
            }
        } catch {
            throw Miss()
        }
    }

    /// The byte range of the next number, validated by the parser's grammar.
    @inlinable
    mutating func numberText() throws(Miss) -> UnsafeBufferPointer<UInt8> {
        let byte = buffer[index]
        guard byte == UInt8(ascii: "-") || isDigit(byte) else { throw Miss() }
        do { return UnsafeBufferPointer(rebasing: buffer[try numberRange()]) } catch { throw Miss() }
    }

    /// `-?[0-9]{1,19}` as an exact `Int64` (what `Int64(text, radix: 10)` gives); `nil` for any other
    /// form (fraction, exponent, more digits) or a value out of range, which the general path handles.
    @inlinable
    static func plainInteger(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        var offset = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative { offset = 1 }
        guard (1...19).contains(text.count - offset) else { return nil }
        // Nineteen digits always fit in 64 unsigned bits.
        var magnitude: UInt64 = 0
        while offset < text.count {
            let digit = text[offset] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            magnitude = magnitude &* 10 &+ UInt64(digit)
            offset += 1
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        return Int64(exactly: magnitude)
    }

    @inlinable
    public mutating func readInt64() throws(Miss) -> Int64? {
        if try readNull() { return nil }
        guard let value = Self.plainInteger(try numberText()) else { throw Miss() }
        return value
    }

    @inlinable
    public mutating func readInt32() throws(Miss) -> Int32? {
        guard let wide = try readInt64() else { return nil }
        guard let value = Int32(exactly: wide) else { throw Miss() }
        return value
    }

    /// Apple's milliseconds since 1970, converted as ``JSONTreeDecoder`` does (`Double(text)` / 1000).
    @inlinable
    public mutating func readDate() throws(Miss) -> Date? {
        if try readNull() { return nil }
        let text = try numberText()
        let milliseconds: Double
        if text.count <= 15, text.first != UInt8(ascii: "-"), let whole = Self.plainInteger(text) {
            // Below 2^53, so exactly the double `Double(text)` parses.
            milliseconds = Double(whole)
        } else {
            guard let parsed = Double(String(decoding: text, as: UTF8.self)), parsed.isFinite else { throw Miss() }
            milliseconds = parsed
        }
        return Date(timeIntervalSince1970: milliseconds / 1000)
    }

    /// A UUID string as `UUID(uuidString:)` reads it. The canonical form (36 bytes, hex digits of
    /// either case and hyphens at 8, 13, 18 and 23) is converted here; any other string goes through
    /// `UUID(uuidString:)` itself.
    @inlinable
    public mutating func readUUID() throws(Miss) -> UUID? {
        if try readNull() { return nil }
        let start = index + 1
        if buffer[index] == UInt8(ascii: "\""), start + 36 < buffer.count, buffer[start + 36] == UInt8(ascii: "\""),
            let uuid = Self.canonicalUUID(UnsafeBufferPointer(rebasing: buffer[start..<(start + 36)]))
        {
            index = start + 37
            return uuid
        }
        guard let text = try readString() else { throw Miss() }
        guard let uuid = UUID(uuidString: text) else { throw Miss() }
        return uuid
    }

    @inlinable
    static func canonicalUUID(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let valid = withUnsafeMutableBytes(of: &bytes) { output -> Bool in
            var position = 0
            for byteIndex in 0..<16 {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = hexDigit(text[position]), let low = hexDigit(text[position + 1]) else { return false }
                output[byteIndex] = high << 4 | low
                position += 2
            }
            return true
        }
        return valid ? UUID(uuid: bytes) : nil
    }

    @inlinable
    static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// An array (or `null`) as the value of a member of an object at `depth`, each element read by
    /// `element` (which must consume it; an element it cannot read throws).
    @inlinable
    public mutating func readArray<Element>(
        depth: Int, _ element: (inout JSONParser) throws(Miss) -> Element
    ) throws(Miss) -> [Element]? {
        if try readNull() { return nil }
        guard depth + 1 <= JSONTree.maximumDepth, buffer[index] == UInt8(ascii: "[") else { throw Miss() }
        index += 1
        var elements: [Element] = []
        skipWhitespace()
        if index < buffer.count, buffer[index] == UInt8(ascii: "]") {
            index += 1
            return elements
        }
        while true {
            skipWhitespace()
            guard index < buffer.count else { throw Miss() }
            elements.append(try element(&self))
            skipWhitespace()
            guard index < buffer.count else { throw Miss() }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return elements
            default: throw Miss()
            }
        }
    }

    /// An array of strings (no `null` elements), inside an object at `depth`.
    @inlinable
    public mutating func readStrings(depth: Int) throws(Miss) -> [String]? {
        try readArray(depth: depth) { (parser) throws(Miss) -> String in
            guard parser.buffer[parser.index] == UInt8(ascii: "\"") else { throw Miss() }
            do { return try parser.string() } catch { throw Miss() }
        }
    }

    /// A rarely present value (summaries, commitment details, Advanced Commerce data) decoded the
    /// general way: parsed into a ``JSONTree`` at its object's `depth` and read by ``JSONTreeDecoder``.
    public mutating func readDecodable<T: Decodable>(_ type: T.Type, depth: Int) throws(Miss) -> T? {
        let node: JSONTree
        do { node = try value(depth: depth) } catch { throw Miss() }
        if case .null = node { return nil }
        do { return try JSONTreeDecoder(node: node, codingPath: []).decodeValue(T.self) } catch { throw Miss() }
    }
}

/// A model's JSON member names, bucketed by length so a key is matched with one or two `memcmp`s.
public struct JSONFieldNames: Sendable {
    @usableFromInline let names: [[UInt8]]
    @usableFromInline let byLength: [[Int]]

    /// - Parameter names: the model's coding keys, in the order the decoder numbers its fields.
    public init(_ names: [String]) {
        self.names = names.map { Array($0.utf8) }
        var byLength = [[Int]](repeating: [], count: (self.names.map(\.count).max() ?? 0) + 1)
        for (field, name) in self.names.enumerated() { byLength[name.count].append(field) }
        self.byLength = byLength
    }

    /// The field number of `key`, or `nil` for a key the model does not have.
    @inlinable
    public func field(_ key: UnsafeBufferPointer<UInt8>) -> Int? {
        guard key.count < byLength.count, let base = key.baseAddress else { return nil }
        for field in byLength[key.count] {
            let matches = names[field].withUnsafeBytes { memcmp($0.baseAddress!, base, key.count) == 0 }
            if matches { return field }
        }
        return nil
    }

    /// The number of fields.
    public var count: Int { names.count }
}
