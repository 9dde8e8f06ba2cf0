import Foundation

/// A UUID in a batch row, encoded as Foundation encodes one (uppercase text) but without its
/// `snprintf` per value: a batch of 500 events carries thousands of them, and the formatting was a
/// tenth of grant's time.
@propertyWrapper
struct UUIDField: Encodable, Hashable {
    var wrappedValue: UUID

    init(wrappedValue: UUID) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(UUIDField.text(wrappedValue))
    }

    /// `uuidString`'s text (`E621E1F8-C36C-495A-93FC-0C247A3E6E5F`), formatted by hand.
    static func text(_ id: UUID) -> String {
        withUnsafeBytes(of: id.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var i = 0
                for (n, byte) in bytes.enumerated() {
                    if n == 4 || n == 6 || n == 8 || n == 10 {
                        out[i] = UInt8(ascii: "-")
                        i += 1
                    }
                    out[i] = hexDigit(byte >> 4)
                    out[i + 1] = hexDigit(byte & 0x0F)
                    i += 2
                }
                return i
            }
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }
}

/// An optional ``UUIDField``: `null` when absent.
@propertyWrapper
struct OptionalUUIDField: Encodable, Hashable {
    var wrappedValue: UUID?

    init(wrappedValue: UUID?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let id = wrappedValue { try container.encode(UUIDField.text(id)) } else { try container.encodeNil() }
    }
}
