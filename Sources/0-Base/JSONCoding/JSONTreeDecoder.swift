import Foundation

/// Decodes `Decodable` models from a ``JSONTree`` with the App Store's rules (dates are Apple's
/// milliseconds since 1970, unknown keys ignored), without Foundation's `JSONDecoder`.
///
/// The verifier decodes three payloads per notification; Foundation's decoder spent more time on
/// them than the SHA-256 and base64 work together. This one parses once into a small tree and
/// decodes straight from it. It is as strict: wrong types, inexact numbers and missing required
/// values throw `DecodingError` with the coding path, which the verifier reports as `malformed`.
struct JSONTreeDecoder: Decoder {
    let node: JSONTree
    /// The path to the parent container, shared by all its children (no copy per value).
    let parentPath: [any CodingKey]
    /// This value's key in its parent, if any.
    let key: (any CodingKey)?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(node: JSONTree, codingPath: [any CodingKey]) {
        self.init(node: node, parentPath: codingPath, key: nil)
    }

    init(node: JSONTree, parentPath: [any CodingKey], key: (any CodingKey)?) {
        self.node = node
        self.parentPath = parentPath
        self.key = key
    }

    var codingPath: [any CodingKey] { key.map { parentPath + [$0] } ?? parentPath }

    /// Parses `bytes` and decodes a `T`.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        let tree: JSONTree
        do {
            tree = try JSONTree.parse(bytes)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not valid JSON: \(error)", underlyingError: error))
        }
        return try JSONTreeDecoder(node: tree, codingPath: []).decodeValue(T.self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = node else { throw mismatch([String: Any].self, node) }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = node else { throw mismatch([Any].self, node) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// Decodes a value of `type` from this node. Dates are milliseconds since 1970, as AppStore's
    /// `AppStoreJSON.decoder` reads them.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == Date.self {
            let milliseconds = try decode(Double.self)
            guard milliseconds.isFinite else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "date is not a finite number"))
            }
            return Date(timeIntervalSince1970: milliseconds / 1000) as! T
        }
        // The casts below are checked by the type tests.
        if T.self == String.self { return try decode(String.self) as! T }
        if T.self == Int64.self { return try decode(Int64.self) as! T }
        if T.self == Bool.self { return try decode(Bool.self) as! T }
        return try T(from: self)
    }

    /// A value of the wrong JSON type; `valueNotFound` for null, as Foundation reports it.
    func mismatch(_ type: Any.Type, _ node: JSONTree) -> DecodingError {
        if case .null = node {
            return DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "expected \(type) but found null"))
        }
        return DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type) but found \(node.typeName)"))
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard case .number(let text) = node else { throw mismatch(type, node) }
        if let value = T(text, radix: 10) { return value }
        // Exponent or fraction forms (`1e3`, `2.0`) are accepted only when exactly integral.
        if let double = Double(text), double.isFinite, let value = T(exactly: double) { return value }
        throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "number \(text.prefix(40)) does not fit in \(type)"))
    }

    func floating<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type) throws -> T {
        guard case .number(let text) = node else { throw mismatch(type, node) }
        guard let value = T(text), value.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: codingPath, debugDescription: "number \(text.prefix(40)) is not representable as \(type)"))
        }
        return value
    }
}

extension JSONTreeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool {
        if case .null = node { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let value) = node else { throw mismatch(type, node) }
        return value
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let value) = node else { throw mismatch(type, node) }
        return value
    }

    func decode(_ type: Double.Type) throws -> Double { try floating(type) }
    func decode(_ type: Float.Type) throws -> Float { try floating(type) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }
}

extension JSONTree {
    /// Parses `bytes` and decodes a `T` with ``JSONTreeDecoder``.
    /// - Throws: `DecodingError`, with the coding path of the value that did not fit.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try JSONTreeDecoder.decode(type, from: bytes)
    }
}

/// A coding key for array positions and dictionary keys in coding paths.
private struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) { (self.stringValue, self.intValue) = (stringValue, nil) }
    init(intValue: Int) { (self.stringValue, self.intValue) = ("Index \(intValue)", intValue) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [(key: String, value: JSONTree)]
    let codingPath: [any CodingKey]

    var allKeys: [Key] {
        var seen = Set<String>()
        return members.compactMap { seen.insert($0.key).inserted ? Key(stringValue: $0.key) : nil }
    }

    /// The member for `key`; the first one when a key repeats, as Foundation resolves it.
    func node(_ key: Key) -> JSONTree? {
        let name = key.stringValue
        let length = name.utf8.count
        for member in members where member.key.utf8.count == length && member.key == name {
            // Comparing lengths first rejects most keys without a string comparison.
            return member.value
        }
        return nil
    }

    func decoder(_ key: Key) throws -> JSONTreeDecoder {
        guard let node = node(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for key \(key.stringValue)"))
        }
        return JSONTreeDecoder(node: node, parentPath: codingPath, key: key)
    }

    func contains(_ key: Key) -> Bool { node(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try decoder(key).decodeNil() }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder(key).decodeValue(type)
    }

    /// One lookup per optional property (the synthesized initialisers of every model call these;
    /// the protocol's default would look the key up three times).
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try optional(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, key) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, key) }

    private func optional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        guard let node = node(key) else { return nil }
        if case .null = node { return nil }
        return try JSONTreeDecoder(node: node, parentPath: codingPath, key: key).decodeValue(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let key = IndexKey(stringValue: "super")
        guard let member = members.first(where: { $0.key == key.stringValue }) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for key super"))
        }
        return JSONTreeDecoder(node: member.value, parentPath: codingPath, key: key)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try decoder(key) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONTree]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(elements: [JSONTree], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    mutating func next(_ type: Any.Type) throws -> JSONTreeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath + [IndexKey(intValue: currentIndex)], debugDescription: "the array has no more elements"))
        }
        defer { currentIndex += 1 }
        return JSONTreeDecoder(node: elements[currentIndex], parentPath: codingPath, key: IndexKey(intValue: currentIndex))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any?.self, .init(codingPath: codingPath, debugDescription: "the array has no more elements"))
        }
        if case .null = elements[currentIndex] {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(type).decodeValue(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next(type).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
}
