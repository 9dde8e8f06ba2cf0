import EntitlementStore
import Foundation
import GrantDecision
import LogKeys
import Logging
import PostgresNIO

/// Brings the database to the schema and mapping this build expects before anything consumes:
/// applies pending migrations (unless `POSTGRES_MIGRATE=false`) and syncs the product mapping.
/// Used by `grant` at start and by `appstorectl migrate`.
public enum DatabasePreparation {
    /// Applies the migrations, retrying while the database is unreachable for up to `patience`.
    /// - Returns: the versions applied now.
    @discardableResult
    public static func migrate(_ configuration: StoreConfiguration, logger: Logger, patience: Duration = .seconds(60)) async throws -> [Int] {
        let directory = try Migration.locateDirectory(explicit: configuration.migrationsDirectory)
        let migrator = try Migrator(
            directory: directory, lockTimeout: configuration.migrationLockTimeout, attempts: configuration.migrationAttempts)
        return try await configuration.withTemporaryClient(logger: logger) { client in
            try await retrying(patience: patience, logger: logger) {
                try await migrator.migrate(client: client, logger: logger)
            }
        }
    }

    /// Migrates (when configured) and syncs the product mapping.
    public static func prepare(_ configuration: GrantConfiguration, logger: Logger) async throws {
        if configuration.store.migrate {
            let applied = try await migrate(configuration.store, logger: logger)
            logger.info("schema ready", metadata: [LogKey.migrationsApplied: "\(applied)"])
        }
        let catalog = configuration.policy.catalog
        try await configuration.store.withTemporaryClient(logger: logger) { client in
            let store = EntitlementStore(client: client, logger: logger)
            try await retrying(patience: .seconds(60), logger: logger) { try await store.syncProducts(catalog) }
        }
        logger.info("product mapping synced", metadata: [LogKey.grantProducts: "\(catalog.products.count)"])
    }

    /// Retries `body` while it fails transiently (the database is starting), up to `patience`.
    static func retrying<T: Sendable>(patience: Duration, logger: Logger, _ body: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + patience
        var delay = Duration.milliseconds(250)
        while true {
            do {
                return try await body()
            } catch let error as MigrationError {
                throw error
            } catch {
                let classified = StoreError.classify(error)
                guard classified.isTransient, ContinuousClock.now + delay < deadline else { throw classified }
                logger.warning("database not ready; retrying", metadata: [LogKey.errorCode: "\(classified.code)"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}
