import Foundation
import LogKeys
import Logging
import StageRuntime
import Synchronization
import Testing

/// Collects the lines a ``JSONLogHandler`` writes.
final class LineSink: Sendable {
    private let lines = Mutex<[[UInt8]]>([])
    var sink: JSONLogHandler.Sink { { line in self.lines.withLock { $0.append(line) } } }
    var all: [[UInt8]] { lines.withLock { $0 } }

    /// Every line parsed as a JSON object (a line that does not parse fails the test).
    func objects() throws -> [[String: Any]] {
        try all.map { line in
            #expect(line.last == UInt8(ascii: "\n"), "a line ends with a newline")
            #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false, "one object per line")
            let object = try JSONSerialization.jsonObject(with: Data(line))
            return try #require(object as? [String: Any], "each line is a JSON object")
        }
    }
}

struct AwkwardError: Error, CustomStringConvertible {
    var description: String { "broker said \"no\"\n\tat line 2 \\ retry" }
}

@Suite("JSON log lines")
struct JSONLogHandlerTests {
    func logger(_ sink: LineSink, level: Logger.Level = .info) -> Logger {
        Logger(label: "appstore.test") { label in
            var handler = JSONLogHandler(label: label, sink: sink.sink)
            handler.logLevel = level
            return handler
        }
    }

    @Test("awkward messages and metadata parse back exactly, with the stable keys")
    func awkward() throws {
        let sink = LineSink()
        var log = logger(sink)
        log[metadataKey: LogKey.stage] = "verify"
        let message = "quote \" backslash \\ newline \n tab \t cr \r nul \u{0} bell \u{7} del \u{7f} unicode é 日本 🎉 \u{2028}"
        log.warning(
            "\(message)",
            metadata: [
                LogKey.partition: "3", LogKey.offset: .stringConvertible(17),
                "nested": ["list": ["a\"b", .dictionary(["deep": "x\ny"])], "n": "1"],
                "empty": "",
            ])
        log.error("failed", error: AwkwardError(), metadata: [LogKey.error: "metadata error too", "message": "clash"])
        let objects = try sink.objects()
        try #require(objects.count == 2)

        let first = objects[0]
        for key in JSONLogHandler.fixedKeys { #expect(first[key] is String, "key \(key)") }
        #expect(first["message"] as? String == message)
        #expect(first["level"] as? String == "warning")
        #expect(first["label"] as? String == "appstore.test")
        #expect(first["source"] as? String == "StageRuntimeTests")
        #expect(first[LogKey.stage] as? String == "verify")
        #expect(first[LogKey.partition] as? String == "3" && first[LogKey.offset] as? String == "17")
        #expect(first["empty"] as? String == "")
        let nested = try #require(first["nested"] as? [String: Any], "nested metadata stays an object")
        #expect(nested["n"] as? String == "1")
        let list = try #require(nested["list"] as? [Any])
        #expect(list.first as? String == "a\"b")
        #expect((list.last as? [String: Any])?["deep"] as? String == "x\ny")
        let time = try #require(first["time"] as? String)
        #expect(time.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil, "ISO 8601 UTC with milliseconds: \(time)")
        let parsed = try #require(try? Date(time, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        #expect(abs(parsed.timeIntervalSinceNow) < 60)

        let second = objects[1]
        #expect(second["error"] as? String == AwkwardError().description, "swift-log's error: parameter is the error key")
        #expect((second["error.type"] as? String)?.hasSuffix("AwkwardError") == true)
        #expect(second["metadata.error"] as? String == "metadata error too")
        #expect(second["message"] as? String == "failed")
        #expect(second["metadata.message"] as? String == "clash", "metadata never overwrites a fixed key")
    }

    @Test("keys are written in a stable order and secrets are redacted")
    func orderAndRedaction() throws {
        let sink = LineSink()
        logger(sink).info("hello", metadata: ["b": "2", "a": "1", "postgres.password": "hunter2", "apiPrivateKey": "-----BEGIN"])
        let text = String(decoding: try #require(sink.all.first), as: UTF8.self)
        #expect(text.hasPrefix(#"{"time":""#))
        let order = [
            "\"time\"", "\"level\"", "\"label\"", "\"message\"", "\"source\"", "\"a\"", "\"apiPrivateKey\"", "\"b\"", "\"postgres.password\"",
        ]
        let positions = order.map { text.range(of: $0)?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil })
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())
        #expect(!text.contains("hunter2") && !text.contains("BEGIN"))
        #expect(text.contains(#""postgres.password":"[redacted]""#))
    }

    @Test("the level filters", arguments: [Logger.Level.trace, .debug, .info, .notice, .warning, .error, .critical])
    func levels(threshold: Logger.Level) throws {
        let sink = LineSink()
        let log = logger(sink, level: threshold)
        for level in Logger.Level.allCases { log.log(level: level, "at \(level)") }
        let written = try sink.objects().map { $0["level"] as? String }
        #expect(written == Logger.Level.allCases.filter { $0 >= threshold }.map(\.rawValue))
    }
}
