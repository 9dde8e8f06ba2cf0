import Foundation

/// Runs long synchronous work (generating thousands of lifecycles in a debug build) on its own
/// thread. Swift Testing runs suites in parallel on a cooperative pool of one thread per core; two
/// such loops on it had starved every other test for half a minute at a time, long enough for
/// their store and broker deadlines to pass.
public func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}
