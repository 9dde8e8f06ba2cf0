import EventLoopTimers
import LogKeys
import Logging
import PostgresNIO

extension StoreConfiguration {
    /// Runs `body` with a `PostgresClient` of its own that runs only meanwhile: for work outside a
    /// service group (start-up migrations, operator commands, benchmarks, tests).
    ///
    /// After `body` the client is closed and its `run()` waited for, but for `closeTimeout` at most:
    /// a pool whose closing never ends (seen in the test suite: every connection closed, its run
    /// still waiting on nothing, a test hung past its time limit) must not hold the caller for good.
    /// Its task is then left behind with a warning; the body's work is done either way.
    public func withTemporaryClient<T: Sendable>(
        logger: Logger, closeTimeout: Duration = .seconds(30), _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let client = PostgresClient(configuration: clientConfiguration(), backgroundLogger: logger)
        let running = Task { await client.run() }
        let result: Result<T, any Error>
        do {
            result = .success(
                try await withTaskCancellationHandler {
                    try await body(client)
                } onCancel: {
                    running.cancel()
                })
        } catch {
            result = .failure(error)
        }
        running.cancel()
        if await !Self.finished(running, within: closeTimeout) {
            logger.warning(
                "a temporary Postgres client did not finish closing; going on without it",
                metadata: [LogKey.postgresTarget: "\(self)", LogKey.postgresCloseTimeout: "\(closeTimeout)"])
        }
        return try result.get()
    }

    /// Whether `task` ends within `timeout` (it is not cancelled again, only no longer waited for).
    private static func finished(_ task: Task<Void, Never>, within timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let once = ResumeOnce(continuation)
            once.attach(EventLoopTimer.after(timeout) { once.resume(returning: false) })
            Task {
                await task.value
                once.resume(returning: true)
            }
        }
    }
}
