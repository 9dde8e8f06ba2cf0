import Foundation

/// Encodes `Encodable` values straight to JSON bytes in one pass, members in the order the value's
/// `encode(to:)` writes them.
///
/// Foundation's `JSONEncoder` first builds a tree of every value (a dictionary per object, keys
/// sorted on output); for grant's batch rows that tree was most of grant's CPU. This encoder keeps
/// the conventions of AppStore's `AppStoreJSON.encoder` — dates as Apple's milliseconds since 1970 (``EncodedMilliseconds``), UUIDs as
/// upper-case text, slashes unescaped, `nil` members omitted, a value that writes nothing as `{}` —
/// but not its sorted keys: members come in declaration order, which is just as deterministic.
///
/// Writing in one pass means a container is finished once a later sibling starts. Synthesized
/// `Codable` never goes back; a hand-written `encode(to:)` that does gets an `EncodingError`,
/// never a wrong document.
public enum StreamingJSONEncoder {
    /// The JSON text of `value` as UTF-8 bytes.
    /// - Throws: `EncodingError` for a non-finite number or a container used out of order.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let writer = StreamingJSONWriter()
        try writer.encodeValue(value, parent: [], key: nil)
        return writer.bytes
    }

    /// The JSON text of `value`.
    public static func encodeToString<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }
}

/// The output and the open containers of one encoding.
final class StreamingJSONWriter {
    private struct State {
        var bytes: [UInt8] = []
        /// Open containers, innermost last.
        var open: [(id: Int, isObject: Bool, count: Int)] = []
        var lastID = 0
        /// A key or an array slot was written and its value is still due.
        var awaitingValue = true
    }

    /// Held through a pointer: the stored properties of a class are checked for exclusive access at
    /// run time on every write, which cost a seventh of the encoding.
    private let state: UnsafeMutablePointer<State>

    init() {
        state = .allocate(capacity: 1)
        state.initialize(to: State())
        state.pointee.bytes.reserveCapacity(1024)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    var bytes: [UInt8] { state.pointee.bytes }

    // MARK: Structure

    /// Encodes `value` into the slot that is due, closing whatever it opened.
    func encodeValue<T: Encodable>(_ value: T, parent: [any CodingKey], key: (any CodingKey)?) throws {
        func codingPath() -> [any CodingKey] { key.map { parent + [$0] } ?? parent }
        if T.self == String.self {
            try beginValue(codingPath())
            writeString(value as! String)
        } else if T.self == Date.self {
            try beginValue(codingPath())
            try writeDate(value as! Date, codingPath())
        } else if T.self == UUID.self {
            try beginValue(codingPath())
            writeUUID(value as! UUID)
        } else if T.self == URL.self {
            try beginValue(codingPath())
            writeString((value as! URL).absoluteString)
        } else if T.self == Data.self {
            try beginValue(codingPath())
            writeString((value as! Data).base64EncodedString())
        } else {
            let depth = state.pointee.open.count
            try value.encode(to: StreamingEncoder(writer: self, parent: parent, key: key))
            fillSlot()
            close(downTo: depth)
        }
    }

    /// Opens an object or array in the slot that is due; returns its identity for later writes.
    func openContainer(isObject: Bool, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Int {
        try beginValue(codingPath())
        state.pointee.bytes.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
        state.pointee.lastID += 1
        state.pointee.open.append((state.pointee.lastID, isObject, 0))
        return state.pointee.lastID
    }

    /// Starts the next member or element of container `id`: finishes the containers nested in it,
    /// writes the separator and, for an object, the key.
    func beginElement(in id: Int, key: String?, _ codingPath: @autoclosure () -> [any CodingKey]) throws {
        fillSlot()
        guard let index = state.pointee.open.lastIndex(where: { $0.id == id }) else {
            throw EncodingError.invalidValue(
                key as Any,
                EncodingError.Context(
                    codingPath: codingPath(),
                    debugDescription: "a container was written to after it was finished; the streaming encoder writes in one pass"))
        }
        close(downTo: index + 1)
        if state.pointee.open[index].count > 0 { state.pointee.bytes.append(UInt8(ascii: ",")) }
        state.pointee.open[index].count += 1
        if let key {
            writeString(key)
            state.pointee.bytes.append(UInt8(ascii: ":"))
        }
        state.pointee.awaitingValue = true
    }

    /// Claims the slot that is due for one value.
    func beginValue(_ codingPath: @autoclosure () -> [any CodingKey]) throws {
        guard state.pointee.awaitingValue else {
            throw EncodingError.invalidValue(
                Optional<Int>.none as Any,
                EncodingError.Context(
                    codingPath: codingPath(), debugDescription: "a second value was written where one was due"))
        }
        state.pointee.awaitingValue = false
    }

    /// A slot nothing was written into holds an empty object, as with Foundation's encoder.
    private func fillSlot() {
        guard state.pointee.awaitingValue else { return }
        state.pointee.awaitingValue = false
        state.pointee.bytes.append(UInt8(ascii: "{"))
        state.pointee.bytes.append(UInt8(ascii: "}"))
    }

    private func close(downTo depth: Int) {
        while state.pointee.open.count > depth {
            state.pointee.bytes.append(state.pointee.open.removeLast().isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        }
    }

    // MARK: Scalars

    func writeLiteral(_ text: StaticString) {
        text.withUTF8Buffer { state.pointee.bytes.append(contentsOf: $0) }
    }

    func writeBool(_ value: Bool) {
        writeLiteral(value ? "true" : "false")
    }

    func writeInteger<I: BinaryInteger>(_ value: I) {
        guard let magnitude = UInt64(exactly: value.magnitude) else {
            state.pointee.bytes.append(contentsOf: String(value).utf8)
            return
        }
        if value < 0 { state.pointee.bytes.append(UInt8(ascii: "-")) }
        let start = state.pointee.bytes.count
        var rest = magnitude
        repeat {
            state.pointee.bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        state.pointee.bytes[start...].reverse()
    }

    func writeDouble(_ value: Double, _ codingPath: @autoclosure () -> [any CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: codingPath(), debugDescription: "\(value) is not a JSON number"))
        }
        if value == value.rounded(), abs(value) < 1e15 {
            writeInteger(Int64(value))
        } else {
            state.pointee.bytes.append(contentsOf: value.description.utf8)
        }
    }

    /// Apple's milliseconds since 1970, by ``EncodedMilliseconds``.
    func writeDate(_ date: Date, _ codingPath: @autoclosure () -> [any CodingKey]) throws {
        switch EncodedMilliseconds(date) {
        case .whole(let milliseconds): writeInteger(milliseconds)
        case .fractional(let milliseconds): try writeDouble(milliseconds, codingPath())
        }
    }

    /// `uuidString`'s text, formatted without Foundation's per-value `snprintf`.
    func writeUUID(_ id: UUID) {
        state.pointee.bytes.append(UInt8(ascii: "\""))
        withUnsafeBytes(of: id.uuid) { raw in
            for (n, byte) in raw.enumerated() {
                if n == 4 || n == 6 || n == 8 || n == 10 { state.pointee.bytes.append(UInt8(ascii: "-")) }
                state.pointee.bytes.append(Self.hexDigit(byte >> 4))
                state.pointee.bytes.append(Self.hexDigit(byte & 0x0F))
            }
        }
        state.pointee.bytes.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }

    /// A JSON string: quotes, backslashes and control characters escaped, everything else verbatim.
    func writeString(_ value: String) {
        var value = value
        state.pointee.bytes.append(UInt8(ascii: "\""))
        value.withUTF8 { utf8 in
            var runStart = 0
            for i in 0..<utf8.count {
                let byte = utf8[i]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                state.pointee.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
                writeEscape(byte)
                runStart = i + 1
            }
            state.pointee.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        state.pointee.bytes.append(UInt8(ascii: "\""))
    }

    private func writeEscape(_ byte: UInt8) {
        state.pointee.bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): state.pointee.bytes.append(byte)
        case 0x08: state.pointee.bytes.append(UInt8(ascii: "b"))
        case 0x0C: state.pointee.bytes.append(UInt8(ascii: "f"))
        case 0x0A: state.pointee.bytes.append(UInt8(ascii: "n"))
        case 0x0D: state.pointee.bytes.append(UInt8(ascii: "r"))
        case 0x09: state.pointee.bytes.append(UInt8(ascii: "t"))
        default:
            writeLiteral("u00")
            state.pointee.bytes.append(Self.hexDigit(byte >> 4) | 0x20)  // lower case, as Foundation writes it
            state.pointee.bytes.append(Self.hexDigit(byte & 0x0F) | 0x20)
        }
    }
}
