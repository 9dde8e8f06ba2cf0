import Foundation
import KafkaClient
import Logging

/// A configuration value that is missing or wrong. Its description is the one line an operator
/// sees when a process refuses to start.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let variable: String
    public let problem: String
    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }
    public var description: String { "configuration error: \(variable) \(problem)" }
}

/// Typed reads of environment variables, each validated with a message naming the variable.
public struct EnvironmentReader: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    public func string(_ name: String) -> String? {
        guard let v = values[name]?.trimmingCharacters(in: .whitespaces), !v.isEmpty else { return nil }
        return v
    }

    public func string(_ name: String, default value: String) -> String { string(name) ?? value }

    public func required(_ name: String) throws(ConfigurationError) -> String {
        guard let v = string(name) else { throw ConfigurationError(variable: name, problem: "is required but not set") }
        return v
    }

    public func int(_ name: String, default value: Int, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let raw = string(name) else { return value }
        guard let v = Int(raw), range.contains(v) else {
            throw ConfigurationError(variable: name, problem: "must be a whole number from \(range.lowerBound) to \(range.upperBound) (got \"\(raw)\")")
        }
        return v
    }

    /// A duration given in milliseconds.
    public func milliseconds(_ name: String, default value: Duration, in range: ClosedRange<Int> = 0...86_400_000) throws(ConfigurationError) -> Duration {
        .milliseconds(try int(name, default: Int(value.milliseconds), in: range))
    }

    public func bool(_ name: String, default value: Bool) throws(ConfigurationError) -> Bool {
        guard let raw = string(name)?.lowercased() else { return value }
        switch raw {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, problem: "must be true or false (got \"\(raw)\")")
        }
    }

    public func choice<T: RawRepresentable>(_ name: String, default value: T) throws(ConfigurationError) -> T where T.RawValue == String, T: CaseIterable {
        guard let raw = string(name) else { return value }
        guard let v = T(rawValue: raw) else {
            throw ConfigurationError(variable: name, problem: "must be one of \(T.allCases.map(\.rawValue).joined(separator: ", ")) (got \"\(raw)\")")
        }
        return v
    }

    /// `LOG_LEVEL`: trace, debug, info (default), notice, warning, error or critical.
    public func logLevel() throws(ConfigurationError) -> Logger.Level {
        let raw = string("LOG_LEVEL", default: "info").lowercased()
        guard let level = Logger.Level(rawValue: raw) else {
            throw ConfigurationError(variable: "LOG_LEVEL", problem: "must be one of trace, debug, info, notice, warning, error, critical (got \"\(raw)\")")
        }
        return level
    }

    /// `LOG_FORMAT`: text (default; readable at a terminal) or json (one object per line; the images set it).
    public func logFormat() throws(ConfigurationError) -> LogFormat {
        let raw = string("LOG_FORMAT", default: "text").lowercased()
        guard let format = LogFormat(rawValue: raw) else {
            throw ConfigurationError(variable: "LOG_FORMAT", problem: "must be text or json (got \"\(raw)\")")
        }
        return format
    }

    /// The cluster connection every process shares: `KAFKA_BOOTSTRAP_SERVERS` (required),
    /// `KAFKA_CLIENT_ID`, and the librdkafka pass-through of ``kafkaProperties()``.
    public func kafkaClient(defaultClientID: String) throws(ConfigurationError) -> KafkaClientConfiguration {
        KafkaClientConfiguration(
            bootstrapServers: try required("KAFKA_BOOTSTRAP_SERVERS"),
            clientID: string("KAFKA_CLIENT_ID", default: defaultClientID),
            properties: try kafkaProperties())
    }

    /// The variables of ``kafkaClient(defaultClientID:)``, ``logLevel()`` and ``logFormat()``, for `--help`.
    public static let commonVariables: [(name: String, default: String, meaning: String)] = [
        ("KAFKA_BOOTSTRAP_SERVERS", "(required)", "host:port[,host:port…] of the Kafka cluster"),
        ("KAFKA_PROP_<NAME>", "", "any librdkafka setting, `_` read as `.` (KAFKA_PROP_SECURITY_PROTOCOL=SSL)"),
        ("KAFKA_PROPERTIES_FILE", "", "file of name=value librdkafka settings (for secrets)"),
        ("KAFKA_CLIENT_ID", "<executable name>", "client.id shown in broker logs"),
        ("LOG_LEVEL", "info", "trace, debug, info, notice, warning, error, critical"),
        ("LOG_FORMAT", "text", "text, or json: one JSON object per line on stderr"),
    ]

    /// librdkafka settings: every `KAFKA_PROP_<NAME>` variable becomes the property `<name>` with
    /// `_` read as `.` (`KAFKA_PROP_SECURITY_PROTOCOL=SSL` → `security.protocol=SSL`), and a file
    /// named by `KAFKA_PROPERTIES_FILE` adds `name=value` lines (for secrets such as `sasl.password`).
    public func kafkaProperties() throws(ConfigurationError) -> [String: String] {
        var props: [String: String] = [:]
        if let path = string("KAFKA_PROPERTIES_FILE") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(variable: "KAFKA_PROPERTIES_FILE", problem: "names a file that cannot be read (\(path))")
            }
            for line in text.split(whereSeparator: \.isNewline) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
                guard let eq = trimmed.firstIndex(of: "=") else {
                    throw ConfigurationError(variable: "KAFKA_PROPERTIES_FILE", problem: "has a line without '=' in \(path)")
                }
                props[String(trimmed[..<eq]).trimmingCharacters(in: .whitespaces)] =
                    String(trimmed[trimmed.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
            }
        }
        for (key, value) in values where key.hasPrefix("KAFKA_PROP_") {
            props[key.dropFirst("KAFKA_PROP_".count).lowercased().replacingOccurrences(of: "_", with: ".")] = value
        }
        return props
    }
}
