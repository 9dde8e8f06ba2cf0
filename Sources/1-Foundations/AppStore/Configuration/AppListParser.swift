import Foundation

/// Reads the apps a verifier serves from text: `bundleId:appAppleId:Environments` entries separated
/// by commas (environments joined by `+` or `|`, the app Apple ID empty when unknown, e.g.
/// `com.example.app:1234567890:Sandbox+Production,com.example.beta::Sandbox`), or a JSON file
/// `[{"bundleId": "…", "appAppleId": 123, "environments": ["Sandbox"]}]`. A test deployment may
/// name `Xcode` (StoreKit Testing in Xcode), never beside Production (see ``SignedDataVerifier``).
public enum AppListParser {
    /// A list that cannot be used; `problem` says which entry and why.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public let problem: String
        public var description: String { problem }
    }

    /// The syntax, for help texts.
    public static let syntax = "bundleId:appAppleId:Sandbox[+Production|+Xcode],… or the path of a JSON file"

    /// Parses a value: a path (it contains `/` or ends in `.json`) is read as a JSON file.
    public static func parse(_ value: String) throws(ParseError) -> [AppStoreApp] {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.contains("/") || trimmed.hasSuffix(".json") {
            guard let data = FileManager.default.contents(atPath: trimmed) else {
                throw ParseError(problem: "names a file that cannot be read (\(trimmed))")
            }
            return try parseJSON(Array(data), path: trimmed)
        }
        return try parseList(trimmed)
    }

    /// Parses `bundleId:appAppleId:Environments` entries separated by commas.
    public static func parseList(_ text: String) throws(ParseError) -> [AppStoreApp] {
        let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !entries.isEmpty else { throw ParseError(problem: "lists no app (expected \(syntax))") }
        var apps: [AppStoreApp] = []
        for entry in entries {
            let parts = entry.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3 else {
                throw ParseError(problem: "has an entry \"\(entry.prefix(100))\" that is not bundleId:appAppleId:Environments")
            }
            var appleID: Int64?
            if !parts[1].isEmpty {
                guard let id = Int64(parts[1]), id > 0 else {
                    throw ParseError(problem: "has an app Apple ID \"\(parts[1].prefix(40))\" that is not a positive number")
                }
                appleID = id
            }
            let names = parts[2].split(whereSeparator: { $0 == "+" || $0 == "|" }).map(String.init)
            apps.append(try app(bundleId: parts[0], appAppleId: appleID, environments: names))
        }
        return try unique(apps)
    }

    /// Parses the JSON file form.
    public static func parseJSON(_ bytes: [UInt8], path: String) throws(ParseError) -> [AppStoreApp] {
        struct Entry: Decodable {
            var bundleId: String
            var appAppleId: Int64?
            var environments: [String]
        }
        let entries: [Entry]
        do {
            entries = try JSONDecoder().decode([Entry].self, from: Data(bytes))
        } catch {
            throw ParseError(problem: "names \(path), which is not a JSON array of {bundleId, appAppleId?, environments}")
        }
        guard !entries.isEmpty else { throw ParseError(problem: "names \(path), which lists no app") }
        var apps: [AppStoreApp] = []
        for entry in entries {
            apps.append(try app(bundleId: entry.bundleId, appAppleId: entry.appAppleId, environments: entry.environments))
        }
        return try unique(apps)
    }

    /// Reads `Sandbox` or `Production` (any case); other environments never carry App Store chains.
    public static func environment(_ name: String) -> AppStoreEnvironment? {
        switch name.trimmingCharacters(in: .whitespaces).lowercased() {
        case "sandbox": .sandbox
        case "production": .production
        default: nil
        }
    }

    /// An app's environment: ``environment(_:)`` or, for test deployments, `Xcode` (any case).
    static func appEnvironment(_ name: String) -> AppStoreEnvironment? {
        if name.trimmingCharacters(in: .whitespaces).lowercased() == "xcode" { return .xcode }
        return environment(name)
    }

    private static func app(bundleId: String, appAppleId: Int64?, environments names: [String]) throws(ParseError) -> AppStoreApp {
        guard !bundleId.isEmpty, !bundleId.contains(where: { $0.isWhitespace }) else {
            throw ParseError(problem: "has an empty or blank bundle ID")
        }
        var environments: Set<AppStoreEnvironment> = []
        for name in names {
            guard let environment = appEnvironment(name) else {
                throw ParseError(problem: "has environment \"\(name.prefix(40))\" for \(bundleId); use Sandbox, Production or Xcode")
            }
            environments.insert(environment)
        }
        do {
            return try AppStoreApp(bundleId: bundleId, appAppleId: appAppleId, environments: environments)
        } catch {
            throw ParseError(problem: "is invalid: \(error.message)")
        }
    }

    private static func unique(_ apps: [AppStoreApp]) throws(ParseError) -> [AppStoreApp] {
        var seen: Set<String> = []
        for app in apps where !seen.insert(app.bundleId).inserted {
            throw ParseError(problem: "lists bundle ID \(app.bundleId) twice")
        }
        return apps
    }
}
