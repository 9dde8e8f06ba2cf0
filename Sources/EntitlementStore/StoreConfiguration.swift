import EnvironmentSettings
import Foundation
import NIOSSL
import PostgresNIO

/// Where the entitlements database is and how to reach it, from `POSTGRES_*` variables. The
/// password comes from a file (`POSTGRES_PASSWORD_FILE`, for mounted secrets) or a variable, and
/// never appears in logs, errors or `description`.
public struct StoreConfiguration: Sendable, CustomStringConvertible {
    public enum TLSMode: String, Sendable, CaseIterable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    public var maximumConnections: Int
    /// Whether to apply pending migrations at start (`POSTGRES_MIGRATE`).
    public var migrate: Bool
    /// The migrations directory (`POSTGRES_MIGRATIONS_DIR`), or nil to search the usual places.
    public var migrationsDirectory: String?

    public static let variables: [(name: String, default: String, meaning: String)] = [
        ("POSTGRES_HOST", "127.0.0.1", "Postgres host"),
        ("POSTGRES_PORT", "5432", "Postgres port"),
        ("POSTGRES_USER", "postgres", "Postgres user"),
        ("POSTGRES_PASSWORD_FILE", "", "file holding the password (preferred for secrets)"),
        ("POSTGRES_PASSWORD", "", "the password, when no file is given"),
        ("POSTGRES_DATABASE", "entitlements", "database name"),
        ("POSTGRES_TLS", "prefer", "disable, prefer or require"),
        ("POSTGRES_MAX_CONNECTIONS", "8", "connection pool size"),
        ("POSTGRES_MIGRATE", "true", "apply pending schemas/migrations at start"),
        ("POSTGRES_MIGRATIONS_DIR", "schemas/migrations (searched)", "directory of the NNNN_name.sql migrations"),
    ]

    public init(
        host: String = "127.0.0.1", port: Int = 5432, username: String = "postgres", password: String? = nil,
        database: String = "entitlements", tls: TLSMode = .disable, maximumConnections: Int = 8,
        migrate: Bool = true, migrationsDirectory: String? = nil
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
        self.maximumConnections = maximumConnections
        self.migrate = migrate
        self.migrationsDirectory = migrationsDirectory
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        host = env.string("POSTGRES_HOST", default: "127.0.0.1")
        port = try env.int("POSTGRES_PORT", default: 5432, in: 1...65535)
        username = env.string("POSTGRES_USER", default: "postgres")
        database = env.string("POSTGRES_DATABASE", default: "entitlements")
        if let path = env.string("POSTGRES_PASSWORD_FILE") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(variable: "POSTGRES_PASSWORD_FILE", problem: "names a file that cannot be read (\(path))")
            }
            password = text.trimmingCharacters(in: .newlines)
        } else {
            password = env.values["POSTGRES_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        }
        tls = try env.choice("POSTGRES_TLS", default: TLSMode.prefer)
        maximumConnections = try env.int("POSTGRES_MAX_CONNECTIONS", default: 8, in: 1...200)
        migrate = try env.bool("POSTGRES_MIGRATE", default: true)
        migrationsDirectory = env.string("POSTGRES_MIGRATIONS_DIR")
        if let dir = migrationsDirectory {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else {
                throw ConfigurationError(variable: "POSTGRES_MIGRATIONS_DIR", problem: "is not a directory (\(dir))")
            }
        }
    }

    /// The postgres-nio client configuration.
    public func clientConfiguration() -> PostgresClient.Configuration {
        let tlsSetting: PostgresClient.Configuration.TLS
        switch tls {
        case .disable: tlsSetting = .disable
        case .prefer: tlsSetting = .prefer(.makeClientConfiguration())
        case .require: tlsSetting = .require(.makeClientConfiguration())
        }
        var config = PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tlsSetting)
        config.options.maximumConnections = maximumConnections
        config.options.connectTimeout = .seconds(5)
        // The store's statements are prepared once per connection (``PreparedBatch``), and planned
        // for every execution: a generic plan made while a table is empty or tiny picks any index
        // that leads with the environment, and would be kept however much the table grows.
        config.options.additionalStartupParameters = [("plan_cache_mode", "force_custom_plan")]
        return config
    }

    public var description: String {
        "postgres://\(username)@\(host):\(port)/\(database) (tls \(tls.rawValue), password \(password == nil ? "none" : "set"))"
    }
}
