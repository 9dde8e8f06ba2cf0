import Foundation
import LogKeys
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How a process writes its logs: `LOG_FORMAT=text` (``TextLogHandler``: swift-log's stream layout,
/// escaped, for people at a terminal) or `json` (one object per line, for a log pipeline; the images' default).
public enum LogFormat: String, CaseIterable, Sendable {
    case text
    case json
}

/// A swift-log handler writing one JSON object per line to stderr (or any sink).
///
/// Keys: `time` (ISO 8601 UTC with milliseconds), `level`, `label`, `message`, `source`, `error`
/// and `error.type` (swift-log's `error:` parameter: its description and type; without one, a
/// metadata value named `error` is written as it is), then every metadata
/// value under its own key, sorted; nested metadata stays nested (objects and arrays). A metadata
/// key that would overwrite one of the fixed keys is written as `metadata.<key>`. Values of keys
/// that name a secret (password, secret, authorization, private key) are written as `[redacted]`.
public struct JSONLogHandler: LogHandler {
    /// Receives each finished line (with its newline).
    public typealias Sink = @Sendable ([UInt8]) -> Void

    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let sink: Sink

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil, sink: @escaping Sink = JSONLogHandler.standardError) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.sink = sink
    }

    /// A handler that writes to stderr.
    public static func standardError(label: String) -> JSONLogHandler { JSONLogHandler(label: label) }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = Self.merged(metadata, metadataProvider, event)
        sink(
            Self.line(
                time: Date(), level: event.level, label: label, message: event.message.description, source: event.source,
                error: event.error, metadata: merged))
    }

    /// A line's metadata: the handler's, then the provider's, then the call's, later ones winning.
    static func merged(_ metadata: Logger.Metadata, _ provider: Logger.MetadataProvider?, _ event: LogEvent) -> Logger.Metadata {
        var merged = metadata
        if let provided = provider?.get(), !provided.isEmpty { merged.merge(provided) { $1 } }
        if let given = event.metadata, !given.isEmpty { merged.merge(given) { $1 } }
        return merged
    }

    /// The keys every line has, in this order.
    public static let fixedKeys = ["time", "level", "label", "message", "source"]

    /// One line: the JSON object and a newline.
    static func line(
        time: Date, level: Logger.Level, label: String, message: String, source: String, error: (any Error)?,
        metadata: Logger.Metadata
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(UInt8(ascii: "{"))
        member(&out, "time", first: true) { JSONText.string(Self.timestamp(time), into: &$0) }
        member(&out, "level") { JSONText.string(level.rawValue, into: &$0) }
        member(&out, "label") { JSONText.string(label, into: &$0) }
        member(&out, "message") { JSONText.string(message, into: &$0) }
        member(&out, "source") { JSONText.string(source, into: &$0) }
        var rest = metadata
        if let error {
            member(&out, LogKey.error) { JSONText.string(String(describing: error), into: &$0) }
            member(&out, LogKey.errorType) { JSONText.string(String(reflecting: type(of: error)), into: &$0) }
            for key in [LogKey.error, LogKey.errorType] {
                if let shadowed = rest.removeValue(forKey: key) { rest["metadata.\(key)"] = shadowed }
            }
        }
        for (key, value) in rest.sorted(by: { $0.key < $1.key }) {
            let name = fixedKeys.contains(key) ? "metadata.\(key)" : key
            member(&out, name) { out in
                if Self.isSecret(key) { JSONText.string("[redacted]", into: &out) } else { JSONText.value(value, into: &out) }
            }
        }
        out.append(UInt8(ascii: "}"))
        out.append(UInt8(ascii: "\n"))
        return out
    }

    private static func member(_ out: inout [UInt8], _ key: String, first: Bool = false, _ value: (inout [UInt8]) -> Void) {
        if !first { out.append(UInt8(ascii: ",")) }
        JSONText.string(key, into: &out)
        out.append(UInt8(ascii: ":"))
        value(&out)
    }

    /// Metadata keys whose values are never written.
    static func isSecret(_ key: String) -> Bool {
        let k = key.lowercased()
        return k.contains("password") || k.contains("secret") || k.contains("authorization") || k.contains("privatekey")
            || k.contains("private_key") || k.contains("private.key")
    }

    /// `2026-11-23T21:55:12.345Z`.
    static func timestamp(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        var millis = Int(((interval - Double(seconds)) * 1000).rounded(.down))
        if millis >= 1000 { millis = 999 }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }

    /// Writes whole lines to stderr; one writer at a time, so lines never interleave.
    public static let standardError: Sink = { line in
        stderrLock.withLock { _ in
            line.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(2, raw.baseAddress! + offset, raw.count - offset)
                    if n > 0 {
                        offset += n
                    } else if n < 0, errno == EINTR {
                        continue
                    } else {
                        return
                    }
                }
            }
        }
    }
    private static let stderrLock = Mutex<Void>(())
}

/// JSON text for strings and metadata values (RFC 8259 escaping).
enum JSONText {
    static func string(_ text: String, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20, 0x7f:
                out += Array("\\u00".utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xf)])
            default:
                // Swift strings are valid UTF-8, so multi-byte sequences pass through whole.
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    static func value(_ value: Logger.Metadata.Value, into out: inout [UInt8]) {
        switch value {
        case .string(let s):
            string(s, into: &out)
        case .stringConvertible(let c):
            string(c.description, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.value(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, item)) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(key, into: &out)
                out.append(UInt8(ascii: ":"))
                if JSONLogHandler.isSecret(key) { string("[redacted]", into: &out) } else { Self.value(item, into: &out) }
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
