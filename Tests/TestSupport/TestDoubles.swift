import Foundation
import Synchronization

/// A clock tests move by hand, for code that takes `() -> Date`.
public final class TestClock: Sendable {
    private let current: Mutex<Date>

    public init(_ start: Date = Date()) {
        current = Mutex(start)
    }

    public var now: Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// A counter shared with `@Sendable` closures.
public final class Counter: Sendable {
    private let value = Mutex(0)

    public init() {}

    /// Adds one; returns the new count.
    @discardableResult
    public func increment() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }

    public var count: Int { value.withLock { $0 } }
}

/// Runs `body`, then `cleanup` whether `body` returned or threw: the shape of every `with` helper
/// that starts something for a test and must stop it.
public func withCleanup<T>(_ body: () async throws -> T, cleanup: () async -> Void) async throws -> T {
    let result: Result<T, any Error>
    do {
        result = .success(try await body())
    } catch {
        result = .failure(error)
    }
    await cleanup()
    return try result.get()
}
