import Foundation
import Logging
import StageRuntime
import Testing

@Suite("text log lines")
struct TextLogHandlerTests {
    func logger(_ sink: LineSink) -> Logger {
        Logger(label: "appstore.test") { TextLogHandler(label: $0, sink: sink.sink) }
    }

    @Test("a value that holds a newline, a carriage return or a terminal escape cannot start a line of its own")
    func forgedLines() throws {
        let sink = LineSink()
        let forged = "ES256\n2026-11-27T04:04:19.000Z critical grant: [GrantService] everything granted\r\u{1b}[2K\u{2028}"
        logger(sink).warning(
            "refused \(forged)", metadata: ["jws.alg": "\(forged)", "ingest.user_id": "a\u{0}b\\n", "sasl.password": "hunter2"])
        let lines = sink.all.map { String(decoding: $0, as: UTF8.self) }
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.hasSuffix("\n") && line.dropLast().allSatisfy { !$0.isNewline })
        #expect(!line.unicodeScalars.contains { $0.properties.generalCategory == .control && $0 != "\n" })
        #expect(line.contains(#"jws.alg=ES256\n2026-11-27T04:04:19.000Z critical grant: [GrantService] everything granted\r\u{1b}[2K\u{2028}"#))
        #expect(line.contains(#"ingest.user_id=a\u{0}b\\n"#), "a backslash is escaped too, so an escape in the input reads as its text")
        #expect(line.contains("sasl.password=[redacted]") && !line.contains("hunter2"))
        #expect(line.contains(" warning appstore.test: ") && line.contains("] refused ES256\\n2026"))
    }

    @Test("plain lines are swift-log's layout: time, level, label, sorted metadata, source, message")
    func layout() throws {
        let sink = LineSink()
        logger(sink).info("started", metadata: ["b": "2", "a": "1"], source: "GrantService")
        let line = String(decoding: try #require(sink.all.first), as: UTF8.self)
        let pattern = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info appstore\.test: a=1 b=2 \[GrantService\] started\n$/#
        #expect(line.wholeMatch(of: pattern) != nil, "\(line)")
    }
}
