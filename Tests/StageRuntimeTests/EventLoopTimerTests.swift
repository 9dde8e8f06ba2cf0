import EventLoopTimers
import Synchronization
import Testing

/// The hot path's deadlines and gather windows run on these timers: a deadline that was met must
/// never fire, and a wait must end as soon as its task is cancelled (a stage's shutdown).
@Suite("Timers on the event loops")
struct EventLoopTimerTests {
    @Test("a timer fires once, after its delay; a cancelled one never fires")
    func firesOnceUnlessCancelled() async throws {
        let fired = Atomic<Int>(0)
        let cancelledFired = Atomic<Int>(0)
        let start = ContinuousClock.now
        let firedAt = Mutex<ContinuousClock.Instant?>(nil)
        _ = EventLoopTimer.after(.milliseconds(50)) {
            firedAt.withLock { $0 = .now }
            fired.add(1, ordering: .relaxed)
        }
        let cancelled = EventLoopTimer.after(.milliseconds(50)) { cancelledFired.add(1, ordering: .relaxed) }
        cancelled.cancel()
        try await Task.sleep(for: .milliseconds(400))
        #expect(fired.load(ordering: .relaxed) == 1)
        #expect(cancelledFired.load(ordering: .relaxed) == 0)
        let at = try #require(firedAt.withLock { $0 })
        #expect(at - start >= .milliseconds(50))
    }

    @Test("a sleep lasts its duration")
    func sleepLastsItsDuration() async throws {
        let start = ContinuousClock.now
        try await EventLoopTimer.sleep(for: .milliseconds(80))
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(80))
        #expect(elapsed < .seconds(2))
    }

    @Test("cancelling a sleeping task ends its sleep at once, with CancellationError")
    func cancellationEndsTheSleep() async throws {
        let start = ContinuousClock.now
        let sleeper = Task { try await EventLoopTimer.sleep(for: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(50))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(ContinuousClock.now - start < .seconds(5))
    }

    @Test("a task cancelled before it sleeps does not sleep")
    func alreadyCancelled() async throws {
        let start = ContinuousClock.now
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await EventLoopTimer.sleep(for: .seconds(30))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(ContinuousClock.now - start < .seconds(5))
    }
}
