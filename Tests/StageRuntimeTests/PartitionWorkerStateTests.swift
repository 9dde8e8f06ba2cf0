import KafkaClient
import Synchronization
import Testing

@testable import StageRuntime

/// The partition worker's state machine alone: what the consumer is told, when the worker's task
/// wakes, and when a stop may stop waiting.
@Suite("Partition worker state machine")
struct PartitionWorkerStateTests {
    typealias Machine = PartitionWorker.StateMachine

    static func record(_ offset: Int64) -> KafkaMessage {
        KafkaMessage(topic: "t", partition: 0, offset: offset, key: nil, value: [], headers: [], timestamp: nil)
    }

    static func offsets(_ action: Machine.TakeAction) -> [Int64]? {
        guard case .batch(let records, _) = action else { return nil }
        return records.map(\.offset)
    }

    @Test("the partition is paused once at the high-water mark and resumed once drained to half, records in order")
    func backpressure() {
        var machine = Machine(highWater: 4, maxBatch: 2)
        var pauses = 0
        for offset in 0..<6 { pauses += machine.enqueue(Self.record(Int64(offset))).pause ? 1 : 0 }
        #expect(pauses == 1 && machine.isPaused)
        // 6 buffered: taking 2 leaves 4 (above half); taking 2 more leaves 2 (half): resume then.
        guard case .batch(let first, let resumeFirst) = machine.take() else {
            Issue.record("no batch")
            return
        }
        #expect(first.map(\.offset) == [0, 1] && !resumeFirst)
        _ = machine.batchFinished()
        guard case .batch(let second, let resumeSecond) = machine.take() else {
            Issue.record("no batch")
            return
        }
        #expect(second.map(\.offset) == [2, 3] && resumeSecond && !machine.isPaused)
        _ = machine.batchFinished()
        let third = machine.take()
        #expect(Self.offsets(third) == [4, 5])
    }

    @Test("a retry pauses the partition, and its end resumes it only if the buffer does not hold it back too")
    func retryAndBuffer() {
        var machine = Machine(highWater: 2, maxBatch: 10)
        let firstFailure = machine.retrying()
        let secondFailure = machine.retrying()
        #expect(firstFailure, "the first transient failure pauses")
        #expect(!secondFailure, "a second one changes nothing")
        #expect(machine.retryingSince != nil)
        let enqueued = [machine.enqueue(Self.record(0)), machine.enqueue(Self.record(1))]
        #expect(enqueued.allSatisfy { !$0.pause }, "already paused")
        let resumedAfterRetry = machine.retryEnded()
        #expect(!resumedAfterRetry, "the full buffer still holds the partition back")
        #expect(machine.retryingSince == nil && machine.isPaused)
        guard case .batch(_, let resume) = machine.take() else {
            Issue.record("no batch")
            return
        }
        #expect(resume && !machine.isPaused)
    }

    @Test("a stop during a batch waits for it: whoever waits is told when it ends, later records are dropped")
    func stopInFlight() {
        var machine = Machine(highWater: 10, maxBatch: 1)
        _ = machine.enqueue(Self.record(0))
        _ = machine.enqueue(Self.record(1))
        let taken = machine.take()
        #expect(Self.offsets(taken) == [0])
        let told = Mutex(0)
        let first = machine.stop(whenDrained: { told.withLock { $0 += 1 } })
        let second = machine.stop(whenDrained: { told.withLock { $0 += 1 } })
        #expect(!first.drained && !second.drained && first.wake == nil)
        let late = machine.enqueue(Self.record(2))
        #expect(late.wake == nil)
        #expect(told.withLock { $0 } == 0, "nobody is told before the batch ends")
        for drained in machine.batchFinished() { drained() }
        #expect(told.withLock { $0 } == 2)
        guard case .stop = machine.take() else {
            Issue.record("a stopped worker takes nothing, the buffered record included")
            return
        }
        let again = machine.stop(whenDrained: {})
        #expect(again.drained, "stopping again has nothing to wait for")
    }

    @Test("a waiting task is woken by a record, or by a stop, which then has nothing to wait for")
    func waiting() async {
        var machine = Machine(highWater: 10, maxBatch: 10)
        guard case .wait = machine.take() else {
            Issue.record("nothing buffered: the task waits")
            return
        }
        let box = Mutex(machine)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let kept = box.withLock { $0.wait(continuation) }
            #expect(kept)
            let action = box.withLock { $0.enqueue(Self.record(7)) }
            #expect(action.wake != nil)
            action.wake?.resume()
        }
        let woken = box.withLock { Self.offsets($0.take()) }
        #expect(woken == [7])
        _ = box.withLock { $0.batchFinished() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let kept = box.withLock { $0.wait(continuation) }
            #expect(kept)
            let action = box.withLock { $0.stop(whenDrained: {}) }
            #expect(action.drained && action.wake != nil)
            action.wake?.resume()
        }
        machine = box.withLock { $0 }
        guard case .stop = machine.take() else {
            Issue.record("stopped")
            return
        }
    }
}
