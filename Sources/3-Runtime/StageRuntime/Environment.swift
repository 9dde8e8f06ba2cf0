import EnvironmentSettings
import Foundation
import KafkaClient
import Logging

/// The settings every process shares: logging and the Kafka connection, each declared once.
public enum CommonSettings {
    public static let bootstrapServers = Setting<String>.required(
        "KAFKA_BOOTSTRAP_SERVERS", meaning: "host:port[,host:port…] of the Kafka cluster")
    public static let propertiesFile = Setting<String?>.optional(
        "KAFKA_PROPERTIES_FILE", meaning: "file of name=value librdkafka settings (for secrets)")
    /// `KAFKA_CLIENT_ID`, defaulting to the process's name.
    public static func clientID(default name: String) -> Setting<String> {
        .text("KAFKA_CLIENT_ID", default: name, meaning: "client.id shown in broker logs")
    }
    public static let logLevel = Setting<Logger.Level>.choice(
        "LOG_LEVEL", default: .info, ignoringCase: true, meaning: "trace, debug, info, notice, warning, error, critical")
    public static let logFormat = Setting<LogFormat>.choice(
        "LOG_FORMAT", default: .text, ignoringCase: true, meaning: "text, or json: one JSON object per line on stderr")
    public static let tasksOnEventLoops = Setting<Bool>.flag(
        "TASKS_ON_EVENT_LOOPS", default: true, shown: "on",
        meaning: "run Swift tasks on NIO's event loops, sparing a thread switch at each hop (on or off)")
    /// A family of variables rather than one: read by ``EnvironmentReader/kafkaProperties()``. Its
    /// values may be SASL credentials, so they are secret.
    public static let kafkaPropertyPattern = SettingDescription(
        name: "KAFKA_PROP_<NAME>", defaultText: "",
        meaning: "any librdkafka setting, `_` read as `.` (KAFKA_PROP_SECURITY_PROTOCOL=SSL), except acks, idempotence and offset commits",
        isSecret: true)

    /// The common variables for `--help` of the process called `name`.
    public static func variables(clientID name: String) -> [SettingDescription] {
        [
            bootstrapServers.help, kafkaPropertyPattern, propertiesFile.help, clientID(default: name).help, logLevel.help, logFormat.help,
            tasksOnEventLoops.help,
        ]
    }
}

extension EnvironmentReader {
    /// ``CommonSettings/logLevel``.
    public func logLevel() throws(ConfigurationError) -> Logger.Level { try read(CommonSettings.logLevel) }

    /// ``CommonSettings/logFormat``: text (default; readable at a terminal) or json (the images set it).
    public func logFormat() throws(ConfigurationError) -> LogFormat { try read(CommonSettings.logFormat) }

    /// The cluster connection every process shares: `KAFKA_BOOTSTRAP_SERVERS` (required),
    /// `KAFKA_CLIENT_ID`, and the librdkafka pass-through of ``kafkaProperties()``.
    public func kafkaClient(defaultClientID: String) throws(ConfigurationError) -> KafkaClientConfiguration {
        KafkaClientConfiguration(
            bootstrapServers: try read(CommonSettings.bootstrapServers),
            clientID: try read(CommonSettings.clientID(default: defaultClientID)),
            properties: try kafkaProperties())
    }

    /// librdkafka properties the pipeline's delivery guarantees rest on (idempotent `acks=all`
    /// producers; offsets stored only for finished records and never committed automatically): a
    /// pass-through that changed one could lose or duplicate acknowledged records, so it is refused.
    public static let guaranteeProperties: Set<String> = [
        "acks", "request.required.acks", "enable.idempotence", "enable.gapless.guarantee",
        "enable.auto.commit", "auto.commit.enable", "enable.auto.offset.store",
    ]

    /// librdkafka settings: every `KAFKA_PROP_<NAME>` variable becomes the property `<name>` with
    /// `_` read as `.` (`KAFKA_PROP_SECURITY_PROTOCOL=SSL` → `security.protocol=SSL`), and a file
    /// named by `KAFKA_PROPERTIES_FILE` adds `name=value` lines (for secrets such as `sasl.password`).
    /// Any of ``guaranteeProperties`` is refused, naming where it came from.
    public func kafkaProperties() throws(ConfigurationError) -> [String: String] {
        var props: [String: String] = [:]
        if let path = try read(CommonSettings.propertiesFile) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(variable: "KAFKA_PROPERTIES_FILE", problem: "names a file that cannot be read (\(path))")
            }
            for line in text.split(whereSeparator: \.isNewline) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
                guard let eq = trimmed.firstIndex(of: "=") else {
                    throw ConfigurationError(variable: "KAFKA_PROPERTIES_FILE", problem: "has a line without '=' in \(path)")
                }
                let name = String(trimmed[..<eq]).trimmingCharacters(in: .whitespaces)
                try Self.refuseGuaranteeProperty(name, variable: "KAFKA_PROPERTIES_FILE")
                props[name] = String(trimmed[trimmed.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
            }
        }
        for (key, value) in values where key.hasPrefix("KAFKA_PROP_") {
            let name = key.dropFirst("KAFKA_PROP_".count).lowercased().replacingOccurrences(of: "_", with: ".")
            try Self.refuseGuaranteeProperty(name, variable: key)
            props[name] = value
        }
        return props
    }

    private static func refuseGuaranteeProperty(_ name: String, variable: String) throws(ConfigurationError) {
        guard guaranteeProperties.contains(name) else { return }
        throw ConfigurationError(
            variable: variable,
            problem:
                "sets \(name), which the pipeline's delivery guarantees fix (idempotent acks=all producers, offsets stored only for finished records); remove it"
        )
    }
}
