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
        let tasks = Mutex<(work: Task<Void, Never>?, timer: Task<Void, Never>?)>((nil, nil))

        /// The caller's continuation, taken once.
        func take() -> CheckedContinuation<T, any Error>? {
            caller.withLock { slot in
                defer { slot = nil }
                return slot
            }
        }
    }

    static func run<T: Sendable>(
        _ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let race = Race<T>()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.caller.withLock { $0 = continuation }
            let timer = Task {
                guard (try? await Task.sleep(for: limit)) != nil, let caller = race.take() else { return }
                caller.resume(
                    throwing: StoreError(
                        code: .timeout, message: "Postgres did not answer \(what) within \(limit)", isTransient: true))
                race.tasks.withLock { $0.work?.cancel() }
            }
            let work = Task {
                let result: Result<T, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                race.take()?.resume(with: result)
                race.tasks.withLock { $0.timer?.cancel() }
            }
            race.tasks.withLock { $0 = (work, timer) }
        }
    }
}
