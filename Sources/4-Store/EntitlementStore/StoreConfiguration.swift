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
    /// How long a migration's statement may wait for a table's lock (`POSTGRES_MIGRATION_LOCK_TIMEOUT_MS`).
    public var migrationLockTimeout: Duration
    /// How many times a migration is tried when it cannot get its locks (`POSTGRES_MIGRATION_ATTEMPTS`).
    public var migrationAttempts: Int

    public static let hostSetting = Setting<String>.text("POSTGRES_HOST", default: "127.0.0.1", meaning: "Postgres host")
    public static let portSetting = Setting<Int>.int("POSTGRES_PORT", default: 5432, in: 1...65535, meaning: "Postgres port")
    public static let userSetting = Setting<String>.text("POSTGRES_USER", default: "postgres", meaning: "Postgres user")
    public static let passwordFile = Setting<String?>.optional(
        "POSTGRES_PASSWORD_FILE", meaning: "file holding the password (preferred for secrets)")
    /// Read as given, spaces and all; a secret.
    public static let passwordSetting = Setting<String?>(
        name: "POSTGRES_PASSWORD", defaultText: "", meaning: "the password, when no file is given", isSecret: true
    ) { env in
        env.values["POSTGRES_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
    }
    public static let databaseSetting = Setting<String>.text("POSTGRES_DATABASE", default: "entitlements", meaning: "database name")
    public static let tlsSetting = Setting<TLSMode>.choice("POSTGRES_TLS", default: .prefer, meaning: "disable, prefer or require")
    public static let maxConnections = Setting<Int>.int(
        "POSTGRES_MAX_CONNECTIONS", default: 8, in: 1...200, meaning: "connection pool size")
    public static let migrateSetting = Setting<Bool>.flag(
        "POSTGRES_MIGRATE", default: true, meaning: "apply pending schemas/migrations at start")
    public static let migrationsDir = Setting<String?>.optional(
        "POSTGRES_MIGRATIONS_DIR", shown: "schemas/migrations (searched)", meaning: "directory of the NNNN_name.sql migrations")
    public static let migrationLockTimeoutSetting = Setting<Duration>.milliseconds(
        "POSTGRES_MIGRATION_LOCK_TIMEOUT_MS", default: .seconds(5), in: 100...600_000,
        meaning: "how long a migration's statement waits for a table's lock before the attempt is rolled back")
    public static let migrationAttemptsSetting = Setting<Int>.int(
        "POSTGRES_MIGRATION_ATTEMPTS", default: 10, in: 1...1000, meaning: "attempts of a migration that cannot get its locks in time")

    /// The variables, for `--help`.
    public static let variables = [
        hostSetting.help, portSetting.help, userSetting.help, passwordFile.help, passwordSetting.help, databaseSetting.help,
        tlsSetting.help, maxConnections.help, migrateSetting.help, migrationsDir.help, migrationLockTimeoutSetting.help,
        migrationAttemptsSetting.help,
    ]

    public init(
        host: String = hostSetting.defaultValue, port: Int = portSetting.defaultValue, username: String = userSetting.defaultValue,
        password: String? = nil,
        database: String = databaseSetting.defaultValue, tls: TLSMode = .disable, maximumConnections: Int = maxConnections.defaultValue,
        migrate: Bool = migrateSetting.defaultValue, migrationsDirectory: String? = nil,
        migrationLockTimeout: Duration = migrationLockTimeoutSetting.defaultValue, migrationAttempts: Int = migrationAttemptsSetting.defaultValue
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
        self.migrationLockTimeout = migrationLockTimeout
        self.migrationAttempts = migrationAttempts
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        host = try env.read(Self.hostSetting)
        port = try env.read(Self.portSetting)
        username = try env.read(Self.userSetting)
        database = try env.read(Self.databaseSetting)
        if let path = try env.read(Self.passwordFile) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(variable: "POSTGRES_PASSWORD_FILE", problem: "names a file that cannot be read (\(path))")
            }
            password = text.trimmingCharacters(in: .newlines)
        } else {
            password = try env.read(Self.passwordSetting)
        }
        tls = try env.read(Self.tlsSetting)
        maximumConnections = try env.read(Self.maxConnections)
        migrate = try env.read(Self.migrateSetting)
        migrationsDirectory = try env.read(Self.migrationsDir)
        migrationLockTimeout = try env.read(Self.migrationLockTimeoutSetting)
        migrationAttempts = try env.read(Self.migrationAttemptsSetting)
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
        return config
    }

    public var description: String {
        "postgres://\(username)@\(host):\(port)/\(database) (tls \(tls.rawValue), password \(password == nil ? "none" : "set"))"
    }
}
