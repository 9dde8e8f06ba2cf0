import EntitlementStore
import Foundation
import GrantDecision
import GrantService
import GrantTestSupport
import GrantWorkload
import KafkaClient
import Testing

/// The pieces of grant's restore detection; the whole story (a real backup restored under a running
/// grant, then the runbook) is `GrantRestoreTests` in the resilience suite.
@Suite("Restore watch", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct RestoreWatchTests {
    @Test("samples: one per partition and minute, the newest of the minute, at most the window's minutes")
    func samples() {
        let samples = CommittedEventSamples(window: 3)
        let p0 = KafkaTopicPartition(topic: "t", partition: 0)
        let p1 = KafkaTopicPartition(topic: "t", partition: 1)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        func event(_ n: Int) -> CommittedEvent { CommittedEvent(environment: "Sandbox", eventKey: "e\(n)") }
        samples.committed(event(1), partition: p0, now: start)
        samples.committed(event(2), partition: p0, now: start.addingTimeInterval(10))
        #expect(samples.events == [event(2)], "the newest of a minute replaces the one before")
        for minute in 1...4 { samples.committed(event(10 + minute), partition: p0, now: start.addingTimeInterval(Double(minute) * 60)) }
        samples.committed(event(99), partition: p1, now: start)
        #expect(Set(samples.events) == [event(12), event(13), event(14), event(99)], "three minutes kept per partition")
    }

    @Test("Postgres answers which committed events it lacks; the watch reports the loss and keeps reporting it as new commits land")
    func missingEvents() async throws {
        try await ScratchDatabase.with { db in
            let policy = GrantPolicy(catalog: LifecycleGenerator.catalog)
            let events = try Array(LifecycleGenerator(seed: 5).stream(customers: 20).prefix(40)).map { try GrantEvent($0) }
            for r in try await db.store.apply(events, policy: policy) { _ = try r.get() }
            let held = events.map { CommittedEvent(environment: $0.environment, eventKey: $0.eventKey) }
            let lost = CommittedEvent(environment: "Production", eventKey: "notification:never-stored")
            #expect(try await db.store.missing(held).isEmpty)
            #expect(try await db.store.missing(held + [lost]) == [lost])

            let watch = RestoreWatch(store: db.store, interval: .seconds(3600), logger: ScratchDatabase.logger)
            let partition = KafkaTopicPartition(topic: "enriched", partition: 0)
            watch.samples.committed(held[0], partition: partition)
            await watch.check()
            #expect(watch.missingEvents == 0)
            watch.samples.committed(lost, partition: partition, now: Date().addingTimeInterval(-120))
            await watch.check()
            #expect(watch.missingEvents == 1)
            // New commits land on the restored database: the loss is still reported.
            watch.samples.committed(held[1], partition: partition, now: Date().addingTimeInterval(60))
            await watch.check()
            #expect(watch.missingEvents == 1)
        }
    }
}
