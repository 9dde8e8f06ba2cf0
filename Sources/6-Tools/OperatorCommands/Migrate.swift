import ArgumentParser
import EntitlementStore
import EnvironmentSettings
import Foundation
import GrantService
import Logging
import StageRuntime

/// `appstorectl migrate`: applies the schema migrations to the entitlements database and exits.
/// The job compose and Kubernetes run before the stages (which can also migrate on start).
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply pending schemas/migrations to the entitlements database and exit.",
        discussion: """
            Connection from POSTGRES_HOST, POSTGRES_PORT, POSTGRES_USER, POSTGRES_PASSWORD_FILE (or \
            POSTGRES_PASSWORD), POSTGRES_DATABASE, POSTGRES_TLS; migrations from POSTGRES_MIGRATIONS_DIR \
            (default: schemas/migrations, searched from the working directory and the executable). \
            Concurrent runs wait for each other. Exit status: 0 when the schema is current, 1 on failure \
            (an applied migration whose file changed, an unreachable database after --wait seconds).
            """)

    @Option(help: "Seconds to keep retrying while the database is unreachable.")
    var wait: Int = 60

    func run() async throws {
        var logger = Logger(label: "appstorectl.migrate")
        logger.logLevel = .info
        let configuration: StoreConfiguration
        do {
            configuration = try StoreConfiguration(environment: EnvironmentReader())
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(78)
        }
        do {
            let applied = try await DatabasePreparation.migrate(configuration, logger: logger, patience: .seconds(wait))
            print(applied.isEmpty ? "schema is current" : "applied migrations \(applied.map(String.init).joined(separator: ", "))")
        } catch {
            FileHandle.standardError.write(Data("migrate failed: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}
