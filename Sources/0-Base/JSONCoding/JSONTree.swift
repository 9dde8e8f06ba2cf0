/// A parsed JSON document, as the verifier's payload decoder reads it.
///
/// Parsing is strict RFC 8259 (no comments, trailing commas, leading zeros, control characters in
/// strings, unpaired surrogates or invalid UTF-8, anywhere in the document) and bounded in depth, so
/// hostile input fails cleanly. That is stricter than Foundation's `JSONDecoder`, which tolerates a
/// trailing comma and does not judge values no model reads; it never accepts what Foundation rejects. Numbers keep their text and are converted only to the type a model asks for, exactly
/// (`1.5` is no integer, `300` is no `Int8`).
public enum JSONTree: Sendable {
    case null
    case bool(Bool)
    /// The number's text, as written.
    case number(String)
    case string(String)
    case array([JSONTree])
    /// Members in document order; a repeated key resolves to its first occurrence, as in Foundation.
    case object([(key: String, value: JSONTree)])

    /// The deepest nesting accepted (Foundation's JSONDecoder stops at 512 as well).
    public static let maximumDepth = 512

    /// Parses a whole document (any value at top level, surrounded only by whitespace).
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONTree {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) -> JSONTree in
            var parser = JSONParser(buffer)
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.error("unexpected data after the JSON value") }
            return value
        }
    }

    /// The JSON type's name, for error messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Where and why a document is not JSON.
public struct JSONSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The byte where reading stopped.
    public let offset: Int
    public let reason: String
    public var description: String { "\(reason) at byte \(offset)" }

    @usableFromInline
    init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
}

/// The strict RFC 8259 reader behind ``JSONTree``; ``DirectJSONDecodable`` reads the hot models
/// with the same methods, so both accept exactly the same documents.
///
/// Its methods are `@inlinable`: the model readers in other modules call them once per member, and
/// inlined they compile to the same code as within one module.
public struct JSONParser {
    @usableFromInline let buffer: UnsafeBufferPointer<UInt8>
    @usableFromInline var index = 0

    @inlinable
    public init(_ buffer: UnsafeBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    @inlinable
    func error(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: index, reason: reason)
    }

    @inlinable
    mutating func skipWhitespace() {
        while index < buffer.count {
            switch buffer[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    @inlinable
    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONTree {
        skipWhitespace()
        guard index < buffer.count else { throw error("unexpected end of data") }
        switch buffer[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character")
        }
    }

    @inlinable
    mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= buffer.count else { throw error("unexpected end of data") }
        for offset in 0..<count where buffer[index + offset] != word.utf8Start[offset] {
            throw error("invalid literal")
        }
        index += count
    }

    @inlinable
    mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONTree {
        guard depth <= JSONTree.maximumDepth else { throw error("nested too deeply") }
        index += 1  // {
        var members: [(key: String, value: JSONTree)] = []
        skipWhitespace()
        if index < buffer.count, buffer[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try string()
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            members.append((key, try value(depth: depth)))
            skipWhitespace()
            guard index < buffer.count else { throw error("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    @inlinable
    mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONTree {
        guard depth <= JSONTree.maximumDepth else { throw error("nested too deeply") }
        index += 1  // [
        var elements: [JSONTree] = []
        skipWhitespace()
        if index < buffer.count, buffer[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard index < buffer.count else { throw error("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    /// A string starting at its opening quote, with escapes decoded and UTF-8 checked. Runs without
    /// escapes (nearly all of Apple's data, including the nested JWS) are skipped eight bytes at a
    /// time and copied in one piece.
    @inlinable
    mutating func string() throws(JSONSyntaxError) -> String {
        index += 1  // "
        let start = index
        skipPlainRun()
        while index < buffer.count {
            let byte = buffer[index]
            if byte == UInt8(ascii: "\"") {
                let text = try utf8(start..<index)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("control character in a string") }
            index += 1
        }
        guard index < buffer.count else { throw error("unterminated string") }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: try utf8(start..<index).unicodeScalars)
        while index < buffer.count {
            let byte = buffer[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                scalars.append(try escape())
            case 0..<0x20:
                throw error("control character in a string")
            default:
                let runStart = index
                while index < buffer.count, buffer[index] != UInt8(ascii: "\""), buffer[index] != UInt8(ascii: "\\"),
                    buffer[index] >= 0x20
                {
                    index += 1
                }
                scalars.append(contentsOf: try utf8(runStart..<index).unicodeScalars)
            }
        }
        throw error("unterminated string")
    }

    /// Skips eight bytes at a time while none of them is `"`, `\\` or a control character: the long
    /// runs (nested JWS of several kilobytes) cost a few instructions per word instead of per byte.
    @inlinable
    mutating func skipPlainRun() {
        guard let base = buffer.baseAddress else { return }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while index + 8 <= buffer.count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            let quote = word ^ 0x2222_2222_2222_2222
            let backslash = word ^ 0x5C5C_5C5C_5C5C_5C5C
            // A byte is zero (after the xor) or below 0x20 exactly when its high bit survives here.
            let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- 0x2020_2020_2020_2020) & ~word)
            if special & highs != 0 { return }
            index += 8
        }
    }

    /// The string for `range`, which must be valid UTF-8. ASCII, nearly all of Apple's data, is
    /// recognised eight bytes at a time and needs no further validation (the generic
    /// `String(validating:as:)` costs more than the copy).
    @inlinable
    func utf8(_ range: Range<Int>) throws(JSONSyntaxError) -> String {
        let bytes = UnsafeBufferPointer(rebasing: buffer[range])
        if Self.isASCII(bytes) { return String(decoding: bytes, as: UTF8.self) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw JSONSyntaxError(offset: range.lowerBound, reason: "invalid UTF-8 in a string")
        }
        return text
    }

    @inlinable
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        var high: UInt64 = 0
        while offset + 8 <= bytes.count {
            high |= UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self)
            offset += 8
        }
        while offset < bytes.count {
            high |= UInt64(bytes[offset])
            offset += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    @inlinable
    mutating func escape() throws(JSONSyntaxError) -> Unicode.Scalar {
        index += 1  // backslash
        guard index < buffer.count else { throw error("unterminated escape") }
        let byte = buffer[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try hex4()
            if (0xD800..<0xDC00).contains(unit) {
                guard index + 1 < buffer.count, buffer[index] == UInt8(ascii: "\\"), buffer[index + 1] == UInt8(ascii: "u")
                else { throw error("unpaired surrogate in \\u escape") }
                index += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                guard let scalar = Unicode.Scalar(value) else { throw error("invalid \\u escape") }
                return scalar
            }
            guard let scalar = Unicode.Scalar(UInt32(unit)) else { throw error("unpaired surrogate in \\u escape") }
            return scalar
        default:
            throw error("invalid escape")
        }
    }

    @inlinable
    mutating func hex4() throws(JSONSyntaxError) -> UInt16 {
        guard index + 4 <= buffer.count else { throw error("unterminated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = buffer[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, returned as its text.
    @inlinable
    mutating func number() throws(JSONSyntaxError) -> String {
        let range = try numberRange()
        return String(decoding: UnsafeBufferPointer(rebasing: buffer[range]), as: UTF8.self)
    }

    /// Consumes a number (see ``number()``) and returns its byte range.
    @inlinable
    mutating func numberRange() throws(JSONSyntaxError) -> Range<Int> {
        let start = index
        if buffer[index] == UInt8(ascii: "-") { index += 1 }
        guard index < buffer.count, isDigit(buffer[index]) else { throw error("invalid number") }
        if buffer[index] == UInt8(ascii: "0") {
            index += 1
            if index < buffer.count, isDigit(buffer[index]) { throw error("leading zero in a number") }
        } else {
            skipDigits()
        }
        if index < buffer.count, buffer[index] == UInt8(ascii: ".") {
            index += 1
            guard index < buffer.count, isDigit(buffer[index]) else { throw error("invalid number") }
            skipDigits()
        }
        if index < buffer.count, buffer[index] == UInt8(ascii: "e") || buffer[index] == UInt8(ascii: "E") {
            index += 1
            if index < buffer.count, buffer[index] == UInt8(ascii: "+") || buffer[index] == UInt8(ascii: "-") { index += 1 }
            guard index < buffer.count, isDigit(buffer[index]) else { throw error("invalid number") }
            skipDigits()
        }
        return start..<index
    }

    @inlinable
    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    @inlinable
    mutating func skipDigits() {
        while index < buffer.count, isDigit(buffer[index]) { index += 1 }
    }
}
