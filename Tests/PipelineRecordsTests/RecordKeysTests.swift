import EnvironmentSettings
import Foundation
import KafkaClient
import PipelineMessages
import Testing

/// enrich's signature on enriched records (RECORD_MAC_KEYS_FILE), as grant checks it.
@Suite("record MAC keys")
struct RecordKeysTests {
    static let first = (id: "k2", secret: [UInt8](repeating: 7, count: 32))
    static let old = (id: "k1", secret: [UInt8](repeating: 9, count: 32))

    @Test("a body signed by enrich passes; changed, unsigned, or signed with an unknown key it is refused, each with its reason")
    func sealAndCheck() throws {
        let keys = try RecordKeys(keys: [Self.first, Self.old])
        let body = Array(#"{"verified":{},"enrichment":{}}"#.utf8)
        let message = EnrichedMessage.make(body: body, key: nil, following: [], keys: keys)
        #expect(keys.refusal(message.value, headers: message.headers) == nil)
        #expect(message.headers.string(RecordKeys.header)?.hasPrefix("k2:") == true, "signed with the first key")

        var changed = body
        changed[2] = UInt8(ascii: "W")
        #expect(keys.refusal(changed, headers: message.headers)?.contains("does not match") == true)
        #expect(keys.refusal(body, headers: [])?.contains("no record-mac") == true)
        let stranger = try RecordKeys(keys: [(id: "k9", secret: [UInt8](repeating: 1, count: 32))])
        #expect(keys.refusal(body, headers: [stranger.seal(body)])?.contains("k9") == true)
        let sameIDOtherSecret = try RecordKeys(keys: [(id: "k2", secret: [UInt8](repeating: 1, count: 32))])
        #expect(keys.refusal(body, headers: [sameIDOtherSecret.seal(body)])?.contains("does not match") == true)
        #expect(keys.refusal(body, headers: [KafkaHeader(key: RecordKeys.header, string: "k2")]) != nil)
        // Rotation: a record the old key signed still passes while the old key is listed.
        let signedBefore = try RecordKeys(keys: [Self.old]).seal(body)
        #expect(keys.refusal(body, headers: [signedBefore]) == nil)
        // A replayed enriched record keeps its signature; a stale one from the input is replaced.
        let again = EnrichedMessage.make(body: body, key: nil, following: [signedBefore], keys: keys)
        #expect(again.headers.filter { $0.key == RecordKeys.header }.count == 1)
        #expect(again.headers.string(RecordKeys.header)?.hasPrefix("k2:") == true)
    }

    @Test("the keys file: one '<id> <base64>' line per key, comments allowed; short keys, bad lines and repeats are named")
    func file() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mac-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        func load(_ text: String) throws(ConfigurationError) -> RecordKeys {
            let path = dir.appendingPathComponent("\(UUID().uuidString).keys").path
            try? text.write(toFile: path, atomically: true, encoding: .utf8)
            return try RecordKeys.load(file: path)
        }
        let key = Data(repeating: 3, count: 32).base64EncodedString()
        #expect(try load("# rotated 2026-11\nk2 \(key)\n\nk1 \(key)\n").keys.map(\.id) == ["k2", "k1"])
        for (text, problem) in [
            ("k1 \(Data(repeating: 3, count: 16).base64EncodedString())", "shorter than 32 bytes"),
            ("k1", "not '<key id> <base64 key>'"), ("k1 not-base64!", "not '<key id> <base64 key>'"),
            ("k1 \(key)\nk1 \(key)", "twice"), ("# nothing", "no key"),
        ] {
            #expect {
                _ = try load(text)
            } throws: { error in
                guard let error = error as? ConfigurationError else { return false }
                return error.variable == "RECORD_MAC_KEYS_FILE" && error.problem.contains(problem)
            }
        }
        #expect {
            _ = try RecordKeys.load(file: dir.appendingPathComponent("missing").path)
        } throws: { ($0 as? ConfigurationError)?.problem.contains("cannot be read") == true }
    }
}
