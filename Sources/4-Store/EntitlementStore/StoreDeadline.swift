import EventLoopTimers
import Foundation

/// Bounds how long one store operation may take. When Postgres dies under an operation, the
/// operation's connection can stay silent instead of failing; without a bound the stage (or the
/// outbox publisher) would wait on it forever, long after Postgres is back. Past the deadline the
/// caller gets a transient ``StoreError`` and retries on a fresh connection; the silent operation is
/// cancelled and left to finish or fail on its own.
enum StoreDeadline {
    static func run<T: Sendable>(
        _ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            // Who answers first, the operation or the timer, resumes the caller.
            let race = ResumeOnce(continuation)
            let work = Task {
                let result: Result<T, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                race.resume(with: result)
            }
            // The event loop's timer, not a sleeping task's: every store call arms one, and a
            // Dispatch timer woke a thread for each when it fired, long after the call had answered.
            race.attach(
                EventLoopTimer.after(limit) {
                    let error = StoreError(code: .timeout, message: "Postgres did not answer \(what) within \(limit)", isTransient: true)
                    guard race.resume(throwing: error) else { return }
                    work.cancel()
                })
        }
    }
}
