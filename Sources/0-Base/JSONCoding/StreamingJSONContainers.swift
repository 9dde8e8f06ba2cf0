import Foundation

/// The `Encoder` handed to one value's `encode(to:)`: it fills the slot that is due when it is made.
/// Asked for its container again, it hands out the same one, as Foundation's does.
final class StreamingEncoder: Encoder {
    let writer: StreamingJSONWriter
    /// The path to the container holding this value, and this value's key in it: the full path is
    /// built only when asked for (an error, or a container).
    private let parent: [any CodingKey]
    private let key: (any CodingKey)?
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// The container this value opened (-1 after a failed open: every write through it throws).
    private var opened: (id: Int, isObject: Bool)?

    init(writer: StreamingJSONWriter, parent: [any CodingKey], key: (any CodingKey)?) {
        self.writer = writer
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] { key.map { parent + [$0] } ?? parent }

    private func containerID(isObject: Bool) -> Int {
        if let opened { return opened.isObject == isObject ? opened.id : -1 }
        let id = (try? writer.openContainer(isObject: isObject, codingPath)) ?? -1
        opened = (id, isObject)
        return id
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(StreamingKeyedContainer<Key>(writer: writer, id: containerID(isObject: true), codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        StreamingUnkeyedContainer(writer: writer, id: containerID(isObject: false), codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        StreamingSingleValueContainer(writer: writer, parent: parent, key: key)
    }
}

/// The key of a `super` member or of an array element in a coding path.
private struct StreamingCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

struct StreamingKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: StreamingJSONWriter
    let id: Int
    let codingPath: [any CodingKey]

    private func begin(_ key: Key) throws {
        try writer.beginElement(in: id, key: key.stringValue, codingPath + [key])
        try writer.beginValue(codingPath + [key])
    }

    mutating func encodeNil(forKey key: Key) throws {
        try begin(key)
        writer.writeLiteral("null")
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try begin(key)
        writer.writeBool(value)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        try begin(key)
        writer.writeString(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try begin(key)
        try writer.writeDouble(value, codingPath + [key])
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try begin(key)
        try writer.writeDouble(Double(value), codingPath + [key])
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int16, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try writer.beginElement(in: id, key: key.stringValue, codingPath + [key])
        try writer.encodeValue(value, parent: codingPath, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested =
            (try? writer.beginElement(in: id, key: key.stringValue, codingPath + [key]))
            .flatMap { try? writer.openContainer(isObject: true, codingPath + [key]) } ?? -1
        return KeyedEncodingContainer(StreamingKeyedContainer<NestedKey>(writer: writer, id: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested =
            (try? writer.beginElement(in: id, key: key.stringValue, codingPath + [key]))
            .flatMap { try? writer.openContainer(isObject: false, codingPath + [key]) } ?? -1
        return StreamingUnkeyedContainer(writer: writer, id: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(named: StreamingCodingKey(stringValue: "super"))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(named: key)
    }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        // A failed start leaves no slot due, so the encoder's first write throws.
        try? writer.beginElement(in: id, key: key.stringValue, codingPath + [key])
        return StreamingEncoder(writer: writer, parent: codingPath, key: key)
    }
}

struct StreamingUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: StreamingJSONWriter
    let id: Int
    let codingPath: [any CodingKey]
    private(set) var count = 0

    init(writer: StreamingJSONWriter, id: Int, codingPath: [any CodingKey]) {
        self.writer = writer
        self.id = id
        self.codingPath = codingPath
    }

    private var elementKey: StreamingCodingKey { StreamingCodingKey(intValue: count) }
    private var elementPath: [any CodingKey] { codingPath + [elementKey] }

    private mutating func beginSlot() throws {
        try writer.beginElement(in: id, key: nil, elementPath)
        count += 1
    }

    private mutating func begin() throws {
        try beginSlot()
        try writer.beginValue(codingPath)
    }

    mutating func encodeNil() throws {
        try begin()
        writer.writeLiteral("null")
    }
    mutating func encode(_ value: Bool) throws {
        try begin()
        writer.writeBool(value)
    }
    mutating func encode(_ value: String) throws {
        try begin()
        writer.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        try begin()
        try writer.writeDouble(value, codingPath)
    }
    mutating func encode(_ value: Float) throws {
        try begin()
        try writer.writeDouble(Double(value), codingPath)
    }
    mutating func encode(_ value: Int) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int8) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int16) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int32) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int64) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt8) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt16) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt32) throws {
        try begin()
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt64) throws {
        try begin()
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = elementKey
        try beginSlot()
        try writer.encodeValue(value, parent: codingPath, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = elementPath
        let nested = (try? beginSlot()).flatMap { try? writer.openContainer(isObject: true, path) } ?? -1
        return KeyedEncodingContainer(StreamingKeyedContainer<NestedKey>(writer: writer, id: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = elementPath
        let nested = (try? beginSlot()).flatMap { try? writer.openContainer(isObject: false, path) } ?? -1
        return StreamingUnkeyedContainer(writer: writer, id: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let key = elementKey
        try? beginSlot()
        return StreamingEncoder(writer: writer, parent: codingPath, key: key)
    }
}

struct StreamingSingleValueContainer: SingleValueEncodingContainer {
    let writer: StreamingJSONWriter
    let parent: [any CodingKey]
    let key: (any CodingKey)?
    var codingPath: [any CodingKey] { key.map { parent + [$0] } ?? parent }

    mutating func encodeNil() throws {
        try writer.beginValue(codingPath)
        writer.writeLiteral("null")
    }
    mutating func encode(_ value: Bool) throws {
        try writer.beginValue(codingPath)
        writer.writeBool(value)
    }
    mutating func encode(_ value: String) throws {
        try writer.beginValue(codingPath)
        writer.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        try writer.beginValue(codingPath)
        try writer.writeDouble(value, codingPath)
    }
    mutating func encode(_ value: Float) throws {
        try writer.beginValue(codingPath)
        try writer.writeDouble(Double(value), codingPath)
    }
    mutating func encode(_ value: Int) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int8) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int16) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int32) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: Int64) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt8) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt16) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt32) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }
    mutating func encode(_ value: UInt64) throws {
        try writer.beginValue(codingPath)
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try writer.encodeValue(value, parent: parent, key: key)
    }
}
