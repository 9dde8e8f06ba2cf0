/// Random damage to a JSON document, for tests that compare decoders on it: one to three bytes
/// replaced by, or inserted from, JSON's punctuation, digits and literals' letters (and NUL, a
/// newline, UTF-8 lead and continuation bytes, an invalid byte), or removed.
public enum JSONMutation {
    static let alphabet = Array(#"{}[]":,.-+eE0123456789 tfnul"\/abcAB"#.utf8) + [0x00, 0x0A, 0xC3, 0xA9, 0xFF]

    public static func mutate(_ document: [UInt8], using random: inout SeededGenerator) -> [UInt8] {
        var bytes = document
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            if bytes.isEmpty { bytes = [UInt8(ascii: "{")] }
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes[position] = alphabet.randomElement(using: &random)!
            case 1: bytes.remove(at: position)
            default: bytes.insert(alphabet.randomElement(using: &random)!, at: position)
            }
        }
        return bytes.isEmpty ? [UInt8(ascii: "{")] : bytes
    }
}
