import EventLoopTimers
import Foundation
import Synchronization

/// Bounds how long one store operation may take. When Postgres dies under an operation, the
/// operation's connection can stay silent instead of failing; without a bound the stage (or the
/// outbox publisher) would wait on it forever, long after Postgres is back. Past the deadline the
/// caller gets a transient ``StoreError`` and retries on a fresh connection; the silent operation is
/// cancelled and left to finish or fail on its own.
enum StoreDeadline {
    /// Who answers first: the operation or the timer. Resumes the caller exactly once.
    private final class Race<T: Sendable>: Sendable {
        let caller = Mutex<CheckedContinuation<T, any Error>?>(nil)
        let timer = Mutex<EventLoopTimer?>(nil)

        /// The caller's continuation, taken once.
        func take() -> CheckedContinuation<T, any Error>? {
            caller.withLock { slot in
                defer { slot = nil }
                return slot
            }
        }

        var isDecided: Bool { caller.withLock { $0 == nil } }
    }

    static func run<T: Sendable>(
        _ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let race = Race<T>()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.caller.withLock { $0 = continuation }
            let work = Task {
                let result: Result<T, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                race.take()?.resume(with: result)
                race.timer.withLock { $0 }?.cancel()
            }
            // The event loop's timer, not a sleeping task's: every store call arms one, and a
            // Dispatch timer woke a thread for each when it fired, long after the call had answered.
            let timer = EventLoopTimer.after(limit) {
                guard let caller = race.take() else { return }
                caller.resume(
                    throwing: StoreError(
                        code: .timeout, message: "Postgres did not answer \(what) within \(limit)", isTransient: true))
                work.cancel()
            }
            race.timer.withLock { $0 = timer }
            if race.isDecided { timer.cancel() }
        }
    }
}
