import NIOCore
import NIOPosix
import Synchronization

/// A timer on one of the process's event loops (NIO's singleton group, where the stages run their
/// tasks and their network I/O), for the timers of the hot path: a store operation's deadline, the
/// gather windows, ingest's acknowledgement deadline.
///
/// `Task.sleep` arms a Dispatch timer. When it fires, a Dispatch thread wakes only to hand the task
/// back to an event loop, and a sleep that was cancelled still fires later, waking a thread for
/// nothing. At 100 notifications/s those were about 500 of grant's context switches a second and 300
/// of ingest's. This timer is the event loop's own `epoll_wait` timeout: it fires on the loop that
/// armed it, and a cancelled one is removed without waking anything.
public struct EventLoopTimer: Sendable {
    private let callback: NIOScheduledCallback

    /// Calls `body` on an event loop after `delay`, unless ``cancel()`` came first. The loop is the
    /// caller's own when it runs on one. Keep `body` short: it runs on the loop.
    public static func after(_ delay: Duration, _ body: @escaping @Sendable () -> Void) -> EventLoopTimer {
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let amount = TimeAmount.nanoseconds(max(0, delay.wholeNanoseconds))
        do {
            return EventLoopTimer(callback: try loop.scheduleCallback(in: amount, handler: Handler(body: body)))
        } catch {
            // Only an event loop that is shutting down refuses; the singleton's never shut down.
            preconditionFailure("the event loop refused a timer: \(error)")
        }
    }

    /// Stops the timer if it has not fired yet; from any thread, without waking its loop.
    public func cancel() { callback.cancel() }

    /// Suspends the calling task for `duration`, as `Task.sleep(for:)` does: throws
    /// `CancellationError` as soon as the task is cancelled.
    public static func sleep(for duration: Duration) async throws {
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard sleeper.wait(continuation) else { return }
                sleeper.arm(after(duration) { sleeper.finish(nil) })
            }
        } onCancel: {
            sleeper.finish(CancellationError())
        }
    }

    private struct Handler: NIOScheduledCallbackHandler, Sendable {
        let body: @Sendable () -> Void
        func handleScheduledCallback(eventLoop: some EventLoop) { body() }
    }

    /// One sleep: resumed once, by its timer or by the task's cancellation, whichever comes first.
    private final class Sleeper: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Void, any Error>?
            var timer: EventLoopTimer?
            var finished = false
        }
        private let state = Mutex(State())

        /// Keeps the continuation; false (and resumed with `CancellationError`) when already cancelled.
        func wait(_ continuation: CheckedContinuation<Void, any Error>) -> Bool {
            let finished = state.withLock { s in
                if !s.finished { s.continuation = continuation }
                return s.finished
            }
            if finished { continuation.resume(throwing: CancellationError()) }
            return !finished
        }

        /// Keeps the timer so a cancellation can stop it; stops it at once if the sleep is over.
        func arm(_ timer: EventLoopTimer) {
            let finished = state.withLock { s in
                if !s.finished { s.timer = timer }
                return s.finished
            }
            if finished { timer.cancel() }
        }

        /// Ends the sleep: normally when `error` is nil (the timer fired), else with `error`.
        func finish(_ error: (any Error)?) {
            let (continuation, timer) = state.withLock { s -> (CheckedContinuation<Void, any Error>?, EventLoopTimer?) in
                guard !s.finished else { return (nil, nil) }
                s.finished = true
                defer {
                    s.continuation = nil
                    s.timer = nil
                }
                return (s.continuation, s.timer)
            }
            if error != nil { timer?.cancel() }
            if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
        }
    }
}

extension Duration {
    /// Whole nanoseconds, rounded down (saturating for durations beyond about 292 years).
    fileprivate var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? .min : .max) : product &+ attoseconds / 1_000_000_000
    }
}
