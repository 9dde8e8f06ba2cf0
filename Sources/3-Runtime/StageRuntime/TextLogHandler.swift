import Foundation
import LogKeys
import Logging

/// `LOG_FORMAT=text`: swift-log's stream layout (`time level label: key=value … [source] message`,
/// one line per entry on stderr) with two things the stream handler does not do. Every control
/// character, line and paragraph separator and backslash in the message and in metadata is written
/// escaped (`\n`, `\r`, `\t`, `\\`, `\u{1b}`…), so a value someone else chose (a JWS header's `alg`, a
/// `userId`) cannot end the line and forge a new one or drive the terminal; and values of keys that
/// name a secret are `[redacted]`, as in ``JSONLogHandler``.
public struct TextLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let sink: JSONLogHandler.Sink

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil, sink: @escaping JSONLogHandler.Sink = JSONLogHandler.standardError) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.sink = sink
    }

    /// A handler that writes to stderr.
    public static func standardError(label: String) -> TextLogHandler { TextLogHandler(label: label) }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = JSONLogHandler.merged(metadata, metadataProvider, event)
        if let error = event.error { merged[LogKey.error] = .string(String(describing: error)) }
        sink(
            Array(
                Self.line(time: Date(), level: event.level, label: label, message: event.message.description, source: event.source, metadata: merged)
                    .utf8))
    }

    /// One line with its newline: `2026-11-27T04:04:19.123Z info grant: a=1 b=x [GrantService] message`.
    static func line(time: Date, level: Logger.Level, label: String, message: String, source: String, metadata: Logger.Metadata) -> String {
        var out = "\(JSONLogHandler.timestamp(time)) \(level) \(escaped(label)):"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            out += " \(escaped(key))=\(JSONLogHandler.isSecret(key) ? "[redacted]" : escaped(value.description))"
        }
        out += " [\(escaped(source))] \(escaped(message))\n"
        return out
    }

    /// `text` with every character that could break or fake a line written as an escape.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where needsEscape(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\\" || scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .lineSeparator
            || scalar.properties.generalCategory == .paragraphSeparator || scalar.properties.generalCategory == .format
    }
}
