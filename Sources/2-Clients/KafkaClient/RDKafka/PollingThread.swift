import Foundation
import Synchronization

/// A dedicated OS thread that runs a blocking poll step in a loop, so librdkafka's blocking calls
/// never occupy Swift's cooperative thread pool.
final class PollingThread: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)

    /// Starts the thread. `step` is called repeatedly until ``stop()``; it should block for a
    /// short bounded time (a poll with a timeout of ~100 ms).
    init(name: String, step: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            while !self.stopped.load(ordering: .acquiring) { step() }
            self.exited.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Stops the loop and waits for the thread to leave it. Must not be called from `step`.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        exited.wait()
    }
}

/// Runs one blocking librdkafka call (commit, flush, close, admin requests: rare, and each may
/// take seconds) on a thread of its own and resumes the caller when it returns. A shared dispatch
/// queue would be limited to one thread per core and let slow calls queue behind each other.
enum Blocking {
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.name = "kafka-blocking"
            thread.start()
        }
    }
}
