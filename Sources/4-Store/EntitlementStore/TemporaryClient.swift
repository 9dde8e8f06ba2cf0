import Logging
import PostgresNIO

extension StoreConfiguration {
    /// Runs `body` with a `PostgresClient` of its own that runs only meanwhile: for work outside a
    /// service group (start-up migrations, operator commands, benchmarks, tests).
    public func withTemporaryClient<T: Sendable>(
        logger: Logger, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let client = PostgresClient(configuration: clientConfiguration(), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}
