import Foundation

// Configuration reading shared by every process and every layer (the store, the API client, the
// stages): typed reads of environment variables, each failure one line naming its variable. No
// dependencies, so the lowest layers can read their settings without importing the stage runtime.

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
            throw ConfigurationError(
                variable: name, problem: "must be a whole number from \(range.lowerBound) to \(range.upperBound) (got \"\(raw)\")")
        }
        return v
    }

    public func double(_ name: String, default value: Double, in range: ClosedRange<Double>) throws(ConfigurationError) -> Double {
        guard let raw = string(name) else { return value }
        guard let parsed = Double(raw), range.contains(parsed) else {
            throw ConfigurationError(
                variable: name, problem: "must be a number from \(range.lowerBound) to \(range.upperBound) (got \"\(raw.prefix(40))\")")
        }
        return parsed
    }

    /// A duration given in milliseconds.
    public func milliseconds(
        _ name: String, default value: Duration, in range: ClosedRange<Int> = 0...86_400_000
    ) throws(ConfigurationError) -> Duration {
        let (seconds, attoseconds) = value.components
        let defaultMilliseconds = Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
        return .milliseconds(try int(name, default: defaultMilliseconds, in: range))
    }

    public func bool(_ name: String, default value: Bool) throws(ConfigurationError) -> Bool {
        guard let raw = string(name)?.lowercased() else { return value }
        switch raw {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, problem: "must be true or false (got \"\(raw)\")")
        }
    }

    public func choice<T: RawRepresentable>(_ name: String, default value: T) throws(ConfigurationError) -> T
    where T.RawValue == String, T: CaseIterable {
        guard let raw = string(name) else { return value }
        guard let v = T(rawValue: raw) else {
            throw ConfigurationError(variable: name, problem: "must be one of \(T.allCases.map(\.rawValue).joined(separator: ", ")) (got \"\(raw)\")")
        }
        return v
    }
}
