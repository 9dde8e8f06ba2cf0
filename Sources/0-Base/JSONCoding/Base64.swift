/// Strict base64 and base64url coding for JWS segments and `x5c` certificates.
///
/// JWS segments are base64url without padding (RFC 7515); `x5c` entries are standard, padded base64
/// (RFC 7515 §4.1.6). Decoding is strict and canonical: only the alphabet, no whitespace, padding only
/// where the variant requires it, and zero unused bits. So every accepted string has exactly one
/// decoding and one encoding, and a modified segment can never decode to the original bytes.
public enum Base64 {
    /// Encodes bytes as base64url without padding, as JWS segments are written.
    public static func encodeURL(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, alphabet: urlAlphabet, pad: false)
    }

    /// Encodes bytes as standard padded base64, as `x5c` entries are written.
    public static func encodeStandard(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, alphabet: standardAlphabet, pad: true)
    }

    /// Decodes unpadded base64url; `nil` for anything not canonical.
    public static func decodeURL(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode($0, table: urlTable, shifted: urlShifted, padded: false) }
    }

    /// Decodes padded standard base64; `nil` for anything not canonical.
    public static func decodeStandard(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode($0, table: standardTable, shifted: standardShifted, padded: true) }
    }

    /// Decodes unpadded base64url from raw UTF-8 bytes; `nil` for anything not canonical.
    public static func decodeURL(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        decode(bytes, table: urlTable, shifted: urlShifted, padded: false)
    }

    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let invalid: UInt8 = 0xFF
    private static let urlTable = makeTable(urlAlphabet)
    private static let standardTable = makeTable(standardAlphabet)

    private static func makeTable(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (index, character) in alphabet.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }

    private static func encode(_ bytes: some Collection<UInt8>, alphabet: [UInt8], pad: Bool) -> String {
        let input = Array(bytes)
        var output = [UInt8]()
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= input.count {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(value >> 18 & 0x3F)])
            output.append(alphabet[Int(value >> 12 & 0x3F)])
            output.append(alphabet[Int(value >> 6 & 0x3F)])
            output.append(alphabet[Int(value & 0x3F)])
            index += 3
        }
        let remaining = input.count - index
        if remaining == 1 {
            let value = UInt32(input[index]) << 16
            output.append(alphabet[Int(value >> 18 & 0x3F)])
            output.append(alphabet[Int(value >> 12 & 0x3F)])
            if pad { output.append(contentsOf: "==".utf8) }
        } else if remaining == 2 {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int(value >> 18 & 0x3F)])
            output.append(alphabet[Int(value >> 12 & 0x3F)])
            output.append(alphabet[Int(value >> 6 & 0x3F)])
            if pad { output.append(UInt8(ascii: "=")) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Four 256-entry tables per alphabet with each character's value pre-shifted to its place in a
    /// 24-bit group, so a group of four characters decodes with four loads and three ORs; an invalid
    /// character sets bit 24.
    private static let urlShifted = makeShiftedTables(urlTable)
    private static let standardShifted = makeShiftedTables(standardTable)
    private static let invalidShifted: UInt32 = 0x0100_0000

    private static func makeShiftedTables(_ table: [UInt8]) -> [UInt32] {
        var shifted = [UInt32](repeating: invalidShifted, count: 4 * 256)
        for character in 0..<256 where table[character] != invalid {
            let value = UInt32(table[character])
            shifted[character] = value << 18
            shifted[256 + character] = value << 12
            shifted[512 + character] = value << 6
            shifted[768 + character] = value
        }
        return shifted
    }

    private static func decode(
        _ input: UnsafeBufferPointer<UInt8>, table: [UInt8], shifted: [UInt32], padded: Bool
    ) -> [UInt8]? {
        var count = input.count
        if padded {
            guard count % 4 == 0 else { return nil }
            if count > 0, input[count - 1] == UInt8(ascii: "=") { count -= 1 }
            if count > 0, input[count - 1] == UInt8(ascii: "=") { count -= 1 }
        }
        let tail = count % 4
        if tail == 1 { return nil }
        let outputCount = count / 4 * 3 + (tail == 0 ? 0 : tail - 1)
        var valid = true
        let output = table.withUnsafeBufferPointer { table in
            shifted.withUnsafeBufferPointer { shifted in
                // Two spare bytes let the main loop store eight bytes where it decoded six.
                [UInt8](unsafeUninitializedCapacity: outputCount + 2) { buffer, initialized in
                    var inIndex = 0
                    var outIndex = 0
                    let output = UnsafeMutableRawPointer(buffer.baseAddress!)
                    while inIndex + 8 <= count {
                        let high =
                            shifted[Int(input[inIndex])] | shifted[256 + Int(input[inIndex + 1])]
                            | shifted[512 + Int(input[inIndex + 2])] | shifted[768 + Int(input[inIndex + 3])]
                        let low =
                            shifted[Int(input[inIndex + 4])] | shifted[256 + Int(input[inIndex + 5])]
                            | shifted[512 + Int(input[inIndex + 6])] | shifted[768 + Int(input[inIndex + 7])]
                        if (high | low) & invalidShifted != 0 {
                            valid = false
                            break
                        }
                        // Six decoded bytes, big-endian, then two that the next store or the count drops.
                        let group = (UInt64(high) << 40 | UInt64(low) << 16).bigEndian
                        output.storeBytes(of: group, toByteOffset: outIndex, as: UInt64.self)
                        inIndex += 8
                        outIndex += 6
                    }
                    while valid, inIndex + 4 <= count {
                        let value =
                            shifted[Int(input[inIndex])] | shifted[256 + Int(input[inIndex + 1])]
                            | shifted[512 + Int(input[inIndex + 2])] | shifted[768 + Int(input[inIndex + 3])]
                        if value & invalidShifted != 0 {
                            valid = false
                            break
                        }
                        buffer[outIndex] = UInt8(truncatingIfNeeded: value >> 16)
                        buffer[outIndex + 1] = UInt8(truncatingIfNeeded: value >> 8)
                        buffer[outIndex + 2] = UInt8(truncatingIfNeeded: value)
                        inIndex += 4
                        outIndex += 3
                    }
                    if valid, tail >= 2 {
                        let a = table[Int(input[inIndex])]
                        let b = table[Int(input[inIndex + 1])]
                        let c = tail == 3 ? table[Int(input[inIndex + 2])] : 0
                        if (a | b | c) & 0xC0 != 0 {
                            valid = false
                        } else {
                            let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                            buffer[outIndex] = UInt8(truncatingIfNeeded: value >> 16)
                            outIndex += 1
                            if tail == 3 {
                                buffer[outIndex] = UInt8(truncatingIfNeeded: value >> 8)
                                outIndex += 1
                                // Canonical: the unused low 2 bits must be zero.
                                if value & 0xFF != 0 { valid = false }
                            } else if value & 0xFFFF != 0 {
                                // Canonical: the unused low 4 bits must be zero.
                                valid = false
                            }
                        }
                    }
                    initialized = valid ? outIndex : 0
                }
            }
        }
        return valid ? output : nil
    }
}
