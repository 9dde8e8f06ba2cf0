import Foundation

/// The local stack's wiring as `deploy/stack.env` states it (ports, the Postgres role, the local
/// broker's group timings): the one description the scripts, compose, Kubernetes and these tests
/// read. A variable set in the environment (as `deploy/local/test` exports them) wins.
public enum LocalStack {
    /// `deploy/stack.env`'s `KEY=value` lines; a missing or unreadable file is a broken checkout.
    public static let values: [String: String] = {
        let url = TestServices.repositoryRoot.appendingPathComponent("deploy/stack.env")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            fatalError("cannot read \(url.path): the local stack's description is part of the repository")
        }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }()

    /// The value of `key`: from the environment when set there under `variable`, else from stack.env.
    public static func value(_ key: String, environment variable: String? = nil) -> String {
        if let variable, let set = ProcessInfo.processInfo.environment[variable], !set.isEmpty { return set }
        guard let value = values[key] else { fatalError("deploy/stack.env has no \(key)") }
        return value
    }

    /// An integer of stack.env (a bad value is a broken checkout, not a test failure).
    public static func int(_ key: String, environment variable: String? = nil) -> Int {
        guard let number = Int(value(key, environment: variable)) else { fatalError("deploy/stack.env's \(key) is not an integer") }
        return number
    }

    /// The stages' group session timeout and heartbeat on the local broker, as the variables the
    /// stage processes read.
    public static var groupTimings: [String: String] {
        [
            "KAFKA_SESSION_TIMEOUT_MS": value("LOCAL_KAFKA_SESSION_TIMEOUT_MS"),
            "KAFKA_HEARTBEAT_INTERVAL_MS": value("LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS"),
        ]
    }
}
