import EnvironmentSettings
import Foundation
import KafkaClient
import Logging

/// The settings every stage process shares: logging and the Kafka connection.
extension EnvironmentReader {
    /// `LOG_LEVEL`: trace, debug, info (default), notice, warning, error or critical.
    public func logLevel() throws(ConfigurationError) -> Logger.Level {
        let raw = string("LOG_LEVEL", default: "info").lowercased()
        guard let level = Logger.Level(rawValue: raw) else {
            throw ConfigurationError(
                variable: "LOG_LEVEL", problem: "must be one of trace, debug, info, notice, warning, error, critical (got \"\(raw)\")")
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
