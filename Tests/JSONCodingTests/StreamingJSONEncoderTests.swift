import Foundation
import JSONCoding
import TestSupport
import Testing

/// `StreamingJSONEncoder` against Foundation's encoder with the same date convention: the same JSON
/// value (member order aside) for the shapes grant's rows use, and typed errors where Foundation's
/// fails too. Apple's models through both encoders are in AppStoreTests (`AppStoreJSONTests`).
@Suite("Streaming JSON encoder")
struct StreamingJSONEncoderTests {
    /// Foundation's encoder writing dates as the streaming encoder does (``EncodedMilliseconds``), as
    /// AppStore's `AppStoreJSON.encoder` is configured.
    static let foundationEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = EncodedMilliseconds.foundationDateStrategy
        return encoder
    }()

    /// Both encodings parsed back into Foundation objects.
    static func bothParsed<T: Encodable>(_ value: T) throws -> (streaming: NSObject, foundation: NSObject) {
        let streaming = try StreamingJSONEncoder.encode(value)
        let foundation = try foundationEncoder.encode(value)
        let options: JSONSerialization.ReadingOptions = [.fragmentsAllowed]
        return (
            try #require(try JSONSerialization.jsonObject(with: Data(streaming), options: options) as? NSObject),
            try #require(try JSONSerialization.jsonObject(with: foundation, options: options) as? NSObject)
        )
    }

    struct Row: Encodable {
        var text: String
        var id: UUID
        var optionalID: UUID?
        var at: Date
        var until: Date?
        var small: Int8
        var big: UInt64
        var negative: Int64
        var ratio: Double
        var flag: Bool
        var tags: [String]
        var nested: [[Int]]
        var byName: [String: Double]
        var empty: [String]
        var nothing: Nothing
        var url: URL
        var data: Data
    }

    /// A value whose `encode(to:)` writes nothing: `{}`, as with Foundation.
    struct Nothing: Encodable {
        func encode(to encoder: any Encoder) throws {}
    }

    @Test(
        "strings, numbers, dates, UUIDs, collections and empty values match Foundation",
        arguments: [
            "", "plain", "quote \" backslash \\ slash /", "controls \u{0}\u{1}\u{8}\u{9}\u{a}\u{c}\u{d}\u{1f}",
            "é 中文 😀 \u{7f}", String(repeating: "x\"", count: 600),
        ])
    func scalars(text: String) throws {
        var random = SeededGenerator(seed: UInt64(text.utf8.count))
        for _ in 0..<50 {
            let whole = Double(Int64.random(in: -4_000_000_000_000...4_000_000_000_000, using: &random))
            let row = Row(
                text: text, id: UUID(), optionalID: Bool.random(using: &random) ? UUID() : nil,
                at: Date(timeIntervalSince1970: whole / 1000),
                until: Bool.random(using: &random) ? Date(timeIntervalSince1970: (whole + 0.5) / 1000) : nil,
                small: Int8.random(in: .min ... .max, using: &random), big: UInt64.random(in: .min ... .max, using: &random),
                negative: Int64.random(in: .min ... -1, using: &random), ratio: Double.random(in: -1e300...1e300, using: &random),
                flag: Bool.random(using: &random), tags: [text, "b"], nested: [[], [1, -2], [Int.min, Int.max]],
                byName: ["a": 0.1, text: -0.0, "c": 1e-7], empty: [], nothing: Nothing(),
                url: URL(string: "https://example.com/a/b?c=d")!, data: Data([0, 1, 2, 250, 255]))
            let both = try Self.bothParsed(row)
            #expect(both.streaming == both.foundation)
        }
        let bothTop = try Self.bothParsed([text])
        #expect(bothTop.streaming == bothTop.foundation)
        #expect(try StreamingJSONEncoder.encodeToString(Nothing()) == "{}")
        #expect(try StreamingJSONEncoder.encodeToString([Nothing(), Nothing()]) == "[{},{}]")
    }

    @Test("members are written in declaration order; nil members are left out")
    func layout() throws {
        struct Pair: Encodable {
            var b: Int
            var a: String?
            var d: Date
        }
        #expect(try StreamingJSONEncoder.encodeToString(Pair(b: 1, a: nil, d: Date(timeIntervalSince1970: 1.5))) == #"{"b":1,"d":1500}"#)
        #expect(
            try StreamingJSONEncoder.encodeToString(Pair(b: -20, a: "x/y", d: Date(timeIntervalSince1970: 1.0 / 1024)))
                == #"{"b":-20,"a":"x/y","d":0.9765625}"#)
        #expect(
            try StreamingJSONEncoder.encodeToString(UUID(uuidString: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")!)
                == #""E621E1F8-C36C-495A-93FC-0C247A3E6E5F""#)
    }

    @Test("a non-finite number and a container written to after its sibling started are EncodingErrors")
    func errors() {
        struct NotANumber: Encodable { var value = Double.nan }
        #expect(throws: EncodingError.self) { try StreamingJSONEncoder.encode(NotANumber()) }
        #expect(throws: EncodingError.self) { try StreamingJSONEncoder.encode([Double.infinity]) }

        /// Goes back to its first nested container after opening a second: one pass cannot.
        struct Interleaved: Encodable {
            enum Keys: String, CodingKey { case first, second, value }
            func encode(to encoder: any Encoder) throws {
                var root = encoder.container(keyedBy: Keys.self)
                var first = root.nestedContainer(keyedBy: Keys.self, forKey: .first)
                var second = root.nestedContainer(keyedBy: Keys.self, forKey: .second)
                try second.encode(2, forKey: .value)
                try first.encode(1, forKey: .value)
            }
        }
        #expect(throws: EncodingError.self) { try StreamingJSONEncoder.encode(Interleaved()) }

        /// Writes two values into one single-value slot.
        struct Twice: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(1)
                try container.encode(2)
            }
        }
        #expect(throws: EncodingError.self) { try StreamingJSONEncoder.encode(Twice()) }
    }
}
