import KafkaClient
import StageRuntime
import Synchronization
import TestSupport
import Testing

/// Copies nothing; remembers each ownership the runner reported, as enrich does to take its part
/// of the App Store API budget.
final class OwnershipRecordingStage: PipelineStage {
    let name = "ownership"
    let reports = Mutex<[PartitionOwnership]>([])

    var latest: PartitionOwnership? { reports.withLock { $0.last } }

    func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] { [] }

    func ownershipChanged(_ ownership: PartitionOwnership) {
        reports.withLock { $0.append(ownership) }
    }
}

@Suite("Each member is told its part of the input", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct PartitionOwnershipTests {
    /// Polls `condition` until it holds; gives up (and the caller's expectation fails) after
    /// `attempts` rounds, generous for a loaded machine that joins groups slowly.
    static func eventually(attempts: Int = 600, _ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<attempts {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(250))
        }
        return condition()
    }

    @Test("two members of a group own parts that add up to the whole; when one leaves, the other is told it owns all")
    func partsAddUp() async throws {
        let input = try await TestServices.makeTopic("own-in", partitions: 6)
        let dlq = try await TestServices.makeTopic("own-dlq")
        let group = TestServices.uniqueGroup("own")
        let first = OwnershipRecordingStage()
        let firstHarness = try StageHarness(stage: first, input: input, deadLetters: dlq, groupID: group)
        let alone = try await Self.eventually { first.latest == PartitionOwnership(owned: 6, total: 6) }
        #expect(alone, "a single member owns all 6 partitions; reports: \(first.reports.withLock { $0 })")
        #expect(first.latest?.share == 1)

        let second = OwnershipRecordingStage()
        let secondHarness = try StageHarness(stage: second, input: input, deadLetters: dlq, groupID: group)
        let split = try await Self.eventually {
            guard let a = first.latest, let b = second.latest else { return false }
            return a.total == 6 && b.total == 6 && a.owned > 0 && b.owned > 0 && a.owned + b.owned == 6
        }
        #expect(split, "two members split 6 partitions: \(first.reports.withLock { $0 }) and \(second.reports.withLock { $0 })")
        let shares = [first.latest?.share ?? 0, second.latest?.share ?? 0]
        #expect(abs(shares.reduce(0, +) - 1) < 1e-9, "the parts of one budget add up to it: \(shares)")

        try await secondHarness.stop()
        let back = try await Self.eventually { first.latest == PartitionOwnership(owned: 6, total: 6) }
        #expect(back, "the remaining member owns all again: \(first.reports.withLock { $0 })")
        try await firstHarness.stop()
    }
}
