import EntitlementStore
import Foundation
import GrantDecision
import GrantService
import GrantTestSupport
import GrantWorkload
import KafkaClient
import PipelineRecords
import ServiceLifecycle
import StageRuntime
import Synchronization
import TestSupport
import Testing

extension Resilience {
    @Suite("grant: Postgres restarted mid-run", .timeLimit(.minutes(15)), .enabled(if: ScratchDatabase.enabled))
    struct GrantPostgresRestartTests {
        @Test("Postgres restarted in the middle of a 10,000-event run: no loss, no duplicate effects, recovery without help")
        func postgresRestart() async throws {
            let policy = GrantPolicy(catalog: LifecycleGenerator.catalog)
            let records = Array(LifecycleGenerator(seed: 314).stream(customers: 1300).prefix(10_000))
            #expect(records.count == 10_000)
            let eventKeys = Set(try records.map { try GrantEvent($0).eventKey })
            let input = try await TestServices.makeTopic("grant-restart-in", partitions: 8)
            let dlq = try await TestServices.makeTopic("grant-restart-dlq")
            let changes = try await TestServices.makeTopic("grant-restart-changes", partitions: 8)
            let producer = try TestServices.makeProducer()
            let messages = try records.map { KafkaOutgoingMessage(topic: input, key: $0.key, value: try $0.encoded()) }
            // Half now; the other half while Postgres is down, so the restart lands mid-run.
            _ = try await producer.sendAll(Array(messages.prefix(5000)))

            // The reference: the same events applied straight to a database that never goes down.
            let stateTables = ScratchDatabase.stateTables
            let changeColumns = [
                ("entitlement_changes", "environment, customer_id, entitlement_key, source_id, change, active, active_until, reason, cause_event_key")
            ]
            let truth = try await groundTruth(records, policy: policy, tables: [stateTables, changeColumns])
            let (expected, expectedChanges) = (truth[0], truth[1])

            try await ScratchDatabase.with { db in
                let logger = ScratchDatabase.logger
                let outboxProducer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
                let publisher = OutboxPublisher(
                    store: db.store, producer: outboxProducer, topic: changes,
                    pollInterval: .milliseconds(100), batchSize: 500, logger: logger)
                let stage = GrantStage(store: db.store, policy: policy, logger: logger) { publisher.notify() }
                let stageProducer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
                let runner = try StageRunner(
                    stage: stage,
                    consumerConfiguration: TestServices.consumerConfiguration(group: TestServices.uniqueGroup("grant"), topics: [input]),
                    producer: stageProducer,
                    configuration: StageRunnerConfiguration(
                        deadLetterTopic: dlq, retry: RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .seconds(1)),
                        maxBatchSize: 100, stuckAfter: .seconds(2)),
                    logger: logger)
                let group = ServiceGroup(services: [outboxProducer, publisher, stageProducer, runner.consumer, runner], logger: logger)
                let task = Task { try await group.run() }

                func applied() async -> Int? { try? await db.count("SELECT count(*) FROM notifications") }
                try await waitUntil(timeout: .seconds(120)) { (await applied() ?? 0) >= 2000 }
                try await LocalHTTP.runScript("deploy/local/down", ["postgres"])
                _ = try await producer.sendAll(Array(messages.dropFirst(5000)))
                await producer.close()
                try await Task.sleep(for: .seconds(4))
                let duringOutage = await applied()
                #expect(duringOutage == nil)
                // While it retries in place the stage reports itself not ready.
                try await waitUntil(timeout: .seconds(20)) { !runner.isReady }
                try await LocalHTTP.runScript("deploy/local/up", ["postgres"])

                try await waitUntil(timeout: .seconds(240)) {
                    let done = await applied() == eventKeys.count
                    let unpublished = try? await db.count("SELECT count(*) FROM outbox WHERE published_at IS NULL")
                    return done && unpublished == 0
                }
                try await waitUntil(timeout: .seconds(20)) { runner.isReady }
                // A restart loses nothing committed: the check made before the first batch after the
                // failed ones found every sampled event (a restore would not; GrantRestoreTests).
                #expect(stage.restoreWatch.missingEvents == 0)
                await group.triggerGracefulShutdown()
                try await task.value

                let actual = try await db.dump(stateTables)
                for (table, rows) in expected { #expect(actual[table] == rows, "table \(table) differs from the reference") }
                #expect(try await db.dump(changeColumns) == expectedChanges, "entitlement changes lost or duplicated")
                // The outbox keeps only what waits: every change is in the history, numbered without gaps.
                #expect(try await db.count("SELECT count(*) FROM outbox") == 0)
                let changeCount = try await db.count("SELECT count(*) FROM entitlement_changes")
                let gaps = try await db.count(
                    """
                    SELECT count(*) FROM (SELECT count(*) AS n, max(seq) AS hi FROM entitlement_changes GROUP BY environment, customer_id) s
                    WHERE hi <> n
                    """)
                #expect(gaps == 0)

                // Every committed change is on the changes topic, and nothing else is.
                let published = try await TopicReader.read(changes) { Set($0.map(Self.identity)).count >= changeCount }
                #expect(Set(published.map(Self.identity)).count == changeCount)
                #expect(published.allSatisfy { $0.headers.string("seq") != nil })
                let letters = try await TopicReader.readAll(dlq)
                #expect(letters.isEmpty)
            }
        }

        private static func identity(_ m: KafkaMessage) -> String { "\(m.keyString ?? "")#\(m.headers.string("seq") ?? "")" }
    }
}
