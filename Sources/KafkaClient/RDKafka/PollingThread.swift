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

/// Runs one blocking librdkafka call on a dispatch queue and resumes the caller when it returns.
enum Blocking {
    private static let queue = DispatchQueue(label: "kafka.blocking", attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }
}
