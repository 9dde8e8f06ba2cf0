import AppStore
import AppStoreServerAPI
import ArgumentParser
import AsyncHTTPClient
import EnrichService
import EntitlementStore
import EnvironmentSettings
import Foundation
import KafkaClient
import PipelineOperations
import PostgresNIO
import RecoveryJobs
import StageRuntime

/// What the API- and database-facing subcommands share: the App Store Server API client built from
/// the App Store API variables enrich reads (AppStoreAPISettings), Postgres from grant's (StoreConfiguration), times and apps.
enum RecoveryEnvironment {
    static let apiVariables = "APPSTORE_APPS, APPSTORE_API_CREDENTIALS, APPSTORE_TRUSTED_ROOTS, APPSTORE_API_BASE_URL (as for enrich)"
    static let databaseVariables =
        "POSTGRES_HOST, POSTGRES_PORT, POSTGRES_USER, POSTGRES_PASSWORD_FILE (or POSTGRES_PASSWORD), POSTGRES_DATABASE, POSTGRES_TLS (as for grant)"
    static let brokerVariables = "KAFKA_BOOTSTRAP_SERVERS (and KAFKA_PROPERTIES_FILE / KAFKA_PROP_*, as for the stages)"

    static func apiSettings() throws -> AppStoreAPISettings {
        do {
            // The jobs spend the part of each app's budget that enrich leaves them.
            return try AppStoreAPISettings(environment: EnvironmentReader()).forJobs
        } catch {
            throw OperationsError(.configuration, "\(error.variable) \(error.problem)")
        }
    }

    /// The API client over the shared HTTP client, every answer verified as enrich verifies it.
    static func apiClient(_ configuration: AppStoreAPISettings) throws -> AppStoreServerAPIClient {
        do {
            return try configuration.makeClient(httpClient: HTTPClient.shared, logger: OperatorEnvironment.logger)
        } catch let error as AppStoreAPIError {
            throw OperationsError.api(error)
        } catch {
            throw OperationsError(.configuration, "the App Store API client cannot be built: \(error)")
        }
    }

    /// Which app and environment a command talks to Apple about: `--environment` when given, else
    /// the only environment APPSTORE_APPS lists for the app, else Production.
    static func target(app bundleId: String, environment: String?, configuration: AppStoreAPISettings) throws -> AppStoreServerAPIClient.Target {
        guard let app = configuration.apps.first(where: { $0.bundleId == bundleId }) else {
            throw OperationsError(
                .unknownApp, "\(bundleId) is not in APPSTORE_APPS (\(configuration.apps.map(\.bundleId).joined(separator: ", ")))")
        }
        if let environment {
            guard let chosen = AppListParser.environment(environment) else {
                throw ValidationError("--environment must be Sandbox or Production (got \(environment))")
            }
            return .init(bundleId: bundleId, environment: chosen)
        }
        let only = app.environments.count == 1 ? app.environments.first : nil
        return .init(bundleId: bundleId, environment: only ?? .production)
    }

    /// Runs `body` with a Postgres client on grant's database, shut down afterwards.
    static func withDatabase<T: Sendable>(_ body: @Sendable (PostgresClient) async throws -> T) async throws -> T {
        let configuration: StoreConfiguration
        do {
            configuration = try StoreConfiguration(environment: EnvironmentReader())
        } catch {
            throw OperationsError(.configuration, "\(error.variable) \(error.problem)")
        }
        let target = "\(configuration.host):\(configuration.port)/\(configuration.database)"
        return try await configuration.withTemporaryClient(logger: OperatorEnvironment.logger) { client in
            // The client retries an unreachable database forever; an operator wants an answer.
            try await withThrowingTaskGroup(of: Void.self) { probe in
                probe.addTask { _ = try await client.query("SELECT 1", logger: OperatorEnvironment.logger).collect() }
                probe.addTask {
                    try await Task.sleep(for: databasePatience)
                    throw OperationsError(.storeUnavailable, "no connection to \(target) within \(databasePatience) (check POSTGRES_*)")
                }
                defer { probe.cancelAll() }
                try await probe.next()
            }
            return try await body(client)
        }
    }

    /// How long the subcommands wait for a first answer from Postgres.
    static let databasePatience = Duration.seconds(15)

    static func producer() throws -> KafkaProducer {
        try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: try OperatorEnvironment.kafkaClient()), logger: OperatorEnvironment.logger)
    }

    static let timeSyntax = OperatorTime.syntax
}

/// `--app` and `--environment`, shared by the subcommands that call Apple.
struct AppOptions: ParsableArguments {
    @Option(help: "The app's bundle ID (one of APPSTORE_APPS).")
    var app: String

    @Option(help: "Sandbox or Production; default: the only one APPSTORE_APPS lists for the app, else Production.")
    var environment: String?

    func validate() throws {
        if let environment, AppListParser.environment(environment) == nil {
            throw ValidationError("--environment must be Sandbox or Production (got \(environment))")
        }
    }
}

/// `--requested-by`: who asks Apple for a change on a customer's behalf (recorded with the request).
struct RequesterOptions: ParsableArguments {
    @Option(help: "Who asks (recorded with the request); default: $USER.")
    var requestedBy: String?

    /// The requester to record.
    var who: String { requestedBy ?? ProcessInfo.processInfo.environment["USER"] ?? "unknown" }

    func validate() throws {
        guard (requestedBy ?? "x").utf8.count <= 256, requestedBy?.isEmpty != true else {
            throw ValidationError("--requested-by must be 1 to 256 bytes")
        }
    }
}

/// `--days` and `--reason`, as Apple's two extension endpoints take them (`extend`, `extend-all`).
struct ExtensionTermsOptions: ParsableArguments {
    @Option(help: "Days to add, 1 to 90.")
    var days: Int

    @Option(help: "Why: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.")
    var reason: Int

    func validate() throws {
        guard (1...90).contains(days) else { throw ValidationError("--days must be 1 to 90 (Apple's limit)") }
        guard (0...3).contains(reason) else { throw ValidationError("--reason must be 0, 1, 2 or 3") }
    }
}
