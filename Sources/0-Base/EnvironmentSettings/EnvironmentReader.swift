import Configuration
import Foundation

// Configuration reading shared by every process and every layer (the store, the API client, the
// stages): each variable is declared once as a ``Setting`` (name, default, meaning, secrecy), read
// through swift-configuration's `ConfigReader` over the environment, and listed by `--help` from
// the same declaration. Every failure is one line naming its variable.

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

/// A variable as `--help` lists it. Only the default is shown, never a value, so a secret's value
/// cannot reach the help text.
public struct SettingDescription: Sendable, Equatable {
    public let name: String
    /// The default as shown; empty when there is none worth showing.
    public let defaultText: String
    public let meaning: String
    public let isSecret: Bool

    public init(name: String, defaultText: String, meaning: String, isSecret: Bool = false) {
        self.name = name
        self.defaultText = defaultText
        self.meaning = meaning
        self.isSecret = isSecret
    }
}

/// One environment variable declared once: how it is read (type, default, range or choices) and
/// how `--help` shows it (``help``) come from this one value.
public struct Setting<Value: Sendable>: Sendable {
    public let name: String
    public let meaning: String
    public let isSecret: Bool
    /// The default as `--help` shows it, derived from the typed default unless given.
    public let defaultText: String
    let read: @Sendable (EnvironmentReader) throws(ConfigurationError) -> Value

    public init(
        name: String, defaultText: String, meaning: String, isSecret: Bool = false,
        read: @escaping @Sendable (EnvironmentReader) throws(ConfigurationError) -> Value
    ) {
        self.name = name
        self.defaultText = defaultText
        self.meaning = meaning
        self.isSecret = isSecret
        self.read = read
    }

    /// What the setting reads when its variable is unset: for code that builds a configuration
    /// without an environment (tests, tools), so each default is still written once, here.
    /// A setting with no default (a required one) must not be asked.
    public var defaultValue: Value {
        do {
            return try read(EnvironmentReader([:]))
        } catch {
            preconditionFailure("\(name) has no default: \(error)")
        }
    }

    /// The line `--help` prints for this variable.
    public var help: SettingDescription {
        SettingDescription(name: name, defaultText: defaultText, meaning: meaning, isSecret: isSecret)
    }
}

extension Setting where Value == String? {
    /// An optional text; unset or blank reads as nil.
    public static func optional(_ name: String, shown: String = "", meaning: String, isSecret: Bool = false) -> Self {
        Self(name: name, defaultText: shown, meaning: meaning, isSecret: isSecret) { env in env.string(name, isSecret: isSecret) }
    }
}

extension Setting where Value == String {
    /// A text with a default.
    public static func text(_ name: String, default value: String, shown: String? = nil, meaning: String) -> Self {
        Self(name: name, defaultText: shown ?? value, meaning: meaning) { env in env.string(name) ?? value }
    }

    /// A text that must be set.
    public static func required(_ name: String, shown: String = "(required)", meaning: String, isSecret: Bool = false) -> Self {
        Self(name: name, defaultText: shown, meaning: meaning, isSecret: isSecret) { env throws(ConfigurationError) in
            guard let value = env.string(name, isSecret: isSecret) else {
                throw ConfigurationError(variable: name, problem: "is required but not set")
            }
            return value
        }
    }
}

extension Setting where Value == Int {
    /// A whole number within `range`.
    public static func int(_ name: String, default value: Int, in range: ClosedRange<Int>, shown: String? = nil, meaning: String) -> Self {
        Self(name: name, defaultText: shown ?? "\(value)", meaning: meaning) { env throws(ConfigurationError) in
            try env.int(name, default: value, in: range)
        }
    }
}

extension Setting where Value == Double {
    /// A number within `range`.
    public static func number(_ name: String, default value: Double, in range: ClosedRange<Double>, meaning: String) -> Self {
        Self(name: name, defaultText: "\(value)", meaning: meaning) { env throws(ConfigurationError) in
            guard let raw = env.string(name) else { return value }
            guard let parsed = try? env.reader.requiredDouble(forKey: ConfigKey([name])), range.contains(parsed) else {
                throw ConfigurationError(
                    variable: name, problem: "must be a number from \(range.lowerBound) to \(range.upperBound) (got \"\(raw.prefix(40))\")")
            }
            return parsed
        }
    }
}

extension Setting where Value == Duration {
    /// A duration given in whole milliseconds within `range`; `--help` shows the default in milliseconds.
    public static func milliseconds(
        _ name: String, default value: Duration, in range: ClosedRange<Int> = 0...86_400_000, meaning: String
    ) -> Self {
        let (seconds, attoseconds) = value.components
        let defaultMilliseconds = Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
        return Self(name: name, defaultText: "\(defaultMilliseconds)", meaning: meaning) { env throws(ConfigurationError) in
            .milliseconds(try env.int(name, default: defaultMilliseconds, in: range))
        }
    }
}

extension Setting where Value == Bool {
    /// On or off: swift-configuration's true/false, yes/no, 1/0, and on/off besides.
    /// - Parameter shown: how `--help` words the default (`on` for switches, `true` for flags).
    public static func flag(_ name: String, default value: Bool, shown: String? = nil, meaning: String) -> Self {
        Self(name: name, defaultText: shown ?? "\(value)", meaning: meaning) { env throws(ConfigurationError) in
            guard let raw = env.string(name) else { return value }
            if let parsed = try? env.reader.requiredBool(forKey: ConfigKey([name])) { return parsed }
            switch raw.lowercased() {
            case "on": return true
            case "off": return false
            default: throw ConfigurationError(variable: name, problem: "must be true or false (got \"\(raw.lowercased())\")")
            }
        }
    }
}

extension Setting {
    /// One of `Value`'s cases, by raw value.
    /// - Parameter ignoringCase: read the value lower-cased (the cases are lower-case).
    public static func choice(_ name: String, default value: Value, ignoringCase: Bool = false, meaning: String) -> Self
    where Value: RawRepresentable<String> & CaseIterable {
        Self(name: name, defaultText: value.rawValue, meaning: meaning) { env throws(ConfigurationError) in
            guard let raw = env.string(name) else { return value }
            let parsed: Value?
            if ignoringCase {
                parsed = Value(rawValue: raw.lowercased())
            } else {
                parsed = try? env.reader.requiredString(forKey: ConfigKey([name]), as: Value.self)
            }
            guard let parsed else {
                throw ConfigurationError(
                    variable: name,
                    problem:
                        "must be one of \(Value.allCases.map(\.rawValue).joined(separator: ", ")) (got \"\(ignoringCase ? raw.lowercased() : raw)\")")
            }
            return parsed
        }
    }
}

/// The environment, read through swift-configuration: a `ConfigReader` over an
/// `EnvironmentVariablesProvider` whose variable names are the keys. Values are trimmed and a blank
/// one counts as unset, as operators expect from `VAR=` in a manifest.
public struct EnvironmentReader: Sendable {
    /// The variables as given, untrimmed: for the few reads a key cannot name (every
    /// `KAFKA_PROP_<NAME>`, a variable named by another one) or that keep spaces (a password).
    public let values: [String: String]
    /// The reader every ``Setting`` goes through.
    public let reader: ConfigReader

    /// - Parameter values: the process's environment, or a test's dictionary.
    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        let present = values.compactMapValues { value -> String? in
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty ? nil : trimmed
        }
        self.values = values
        // librdkafka pass-through settings carry SASL passwords and the like: never shown by the library.
        let provider = EnvironmentVariablesProvider(
            environmentVariables: present, secretsSpecifier: .dynamic { name, _ in name.hasPrefix("KAFKA_PROP_") })
        reader = ConfigReader(provider: provider)
    }

    /// Reads `setting`: its value, its default, or a ``ConfigurationError`` naming it.
    public func read<Value>(_ setting: Setting<Value>) throws(ConfigurationError) -> Value {
        try setting.read(self)
    }

    /// The value of `name`, or nil when unset or blank.
    public func string(_ name: String, isSecret: Bool = false) -> String? {
        reader.string(forKey: ConfigKey([name]), isSecret: isSecret)
    }

    func int(_ name: String, default value: Int, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let raw = string(name) else { return value }
        guard let parsed = try? reader.requiredInt(forKey: ConfigKey([name])), range.contains(parsed) else {
            throw ConfigurationError(
                variable: name, problem: "must be a whole number from \(range.lowerBound) to \(range.upperBound) (got \"\(raw)\")")
        }
        return parsed
    }
}
