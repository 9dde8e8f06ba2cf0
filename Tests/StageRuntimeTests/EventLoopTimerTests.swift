import EventLoopTimers
import Synchronization
import Testing

/// The hot path's deadlines and gather windows run on these timers: a deadline that was met must
/// never fire, and a wait must end as soon as its task is cancelled (a stage's shutdown). No upper
/// bound on wall time is asserted: the whole suite shares two cores, and a starved test process is
/// late for everything. A wait that does not end fails by the time limit.
@Suite("Timers on the event loops")
struct EventLoopTimerTests {
    @Test("a timer fires once, after its delay; a cancelled one never fires", .timeLimit(.minutes(15)))
    func firesOnceUnlessCancelled() async throws {
        let fired = Atomic<Int>(0)
        let cancelledFired = Atomic<Int>(0)
        let start = ContinuousClock.now
        let firedAfter = await withCheckedContinuation { (done: CheckedContinuation<Duration, Never>) in
            // Armed from a timer's callback, both timers are that event loop's, and a loop fires its
            // timers in deadline order: the cancelled one was due first.
            _ = EventLoopTimer.after(.zero) {
                let cancelled = EventLoopTimer.after(.milliseconds(20)) { cancelledFired.add(1, ordering: .relaxed) }
                cancelled.cancel()
                _ = EventLoopTimer.after(.milliseconds(50)) {
                    if fired.add(1, ordering: .relaxed).newValue == 1 { done.resume(returning: ContinuousClock.now - start) }
                }
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(firedAfter >= .milliseconds(50))
        #expect(fired.load(ordering: .relaxed) == 1)
        #expect(cancelledFired.load(ordering: .relaxed) == 0)
    }

    @Test("a sleep lasts its duration", .timeLimit(.minutes(15)))
    func sleepLastsItsDuration() async throws {
        let start = ContinuousClock.now
        try await EventLoopTimer.sleep(for: .milliseconds(80))
        #expect(ContinuousClock.now - start >= .milliseconds(80))
    }

    @Test("cancelling a sleeping task ends its sleep at once, with CancellationError", .timeLimit(.minutes(15)))
    func cancellationEndsTheSleep() async throws {
        let sleeper = Task { try await EventLoopTimer.sleep(for: .seconds(3600)) }
        try await Task.sleep(for: .milliseconds(50))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }

    @Test("a task cancelled before it sleeps does not sleep", .timeLimit(.minutes(15)))
    func alreadyCancelled() async throws {
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await EventLoopTimer.sleep(for: .seconds(3600))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
