import NIOCore
import NIOPosix

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
        let sleep = ResumeOnce<Void, any Error>()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard sleep.arm(continuation) else { return }
                sleep.attach(after(duration) { sleep.resume() })
            }
        } onCancel: {
            sleep.resume(throwing: CancellationError())
        }
    }

    private struct Handler: NIOScheduledCallbackHandler, Sendable {
        let body: @Sendable () -> Void
        func handleScheduledCallback(eventLoop: some EventLoop) { body() }
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
