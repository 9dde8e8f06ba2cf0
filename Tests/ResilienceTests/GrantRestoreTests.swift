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
import TestSupport
import Testing

extension Resilience {
    /// docs/operations.md, "After a database restore or failover", played through: grant's committed
    /// offsets run ahead of a restored Postgres, grant notices (``RestoreWatch``), and the runbook's
    /// replay (`appstorectl replay --stage grant --from`) brings every customer back to the truth.
    @Suite("grant: Postgres restored to an earlier point", .timeLimit(.minutes(15)), .enabled(if: ScratchDatabase.enabled))
    struct GrantRestoreTests {
        @Test("10,000 events, a backup at T, more events, Postgres restored to T: the alert fires, then the runbook's replay restores every customer")
        func restoreThenReplay() async throws {
            let policy = GrantPolicy(catalog: LifecycleGenerator.catalog)
            let records = Array(LifecycleGenerator(seed: 2718).stream(customers: 1600).prefix(12_000))
            #expect(records.count == 12_000)
            let firstKeys = Set(try records.prefix(10_000).map { try GrantEvent($0).eventKey })
            let allKeys = Set(try records.map { try GrantEvent($0).eventKey })
            let input = try await TestServices.makeTopic("grant-restore-in", partitions: 8)
            let dlq = try await TestServices.makeTopic("grant-restore-dlq")
            let changes = try await TestServices.makeTopic("grant-restore-changes", partitions: 8)
            let group = TestServices.uniqueGroup("grant-restore")
            let producer = try TestServices.makeProducer()
            let messages = try records.map { KafkaOutgoingMessage(topic: input, key: $0.key, value: try $0.encoded()) }

            // The truth: every event applied to a database that is never restored.
            let expected = try await groundTruth(records, policy: policy, tables: [ScratchDatabase.stateTables])[0]

            try await ScratchDatabase.with { db in
                func applied() async -> Int? { try? await db.count("SELECT count(*) FROM notifications") }
                let backup = FileManager.default.temporaryDirectory.appendingPathComponent("\(db.name).dump")
                defer { try? FileManager.default.removeItem(at: backup) }

                var grant = try Grant(db: db, policy: policy, input: input, dlq: dlq, changes: changes, group: group)
                _ = try await producer.sendAll(Array(messages.prefix(10_000)))
                try await waitUntil(timeout: .seconds(240)) { await applied() == firstKeys.count }

                // The backup at T: every event produced so far is in it.
                let backupTime = Date()
                try await Self.postgres("pg_dump", ["--format=custom", "--file=\(backup.path)", db.name])
                _ = try await producer.sendAll(Array(messages.dropFirst(10_000)))
                await producer.close()
                try await waitUntil(timeout: .seconds(240)) { await applied() == allKeys.count }
                #expect(grant.stage.restoreWatch.missingEvents == 0, "nothing is missing while Postgres keeps what grant committed")

                // Postgres restored to T while grant runs: its committed offsets are now past 2,000
                // events the database no longer holds.
                try await Self.restore(db.name, from: backup)
                #expect(await applied() == firstKeys.count)
                try await waitUntil(timeout: .seconds(60)) { grant.stage.restoreWatch.missingEvents > 0 }

                // The runbook: stop grant, move it back to a little before T, start it again.
                try await grant.stop()
                let from = ISO8601DateFormatter().string(from: backupTime.addingTimeInterval(-30))
                let replay = try await BuiltProducts.run(
                    "appstorectl", ["replay", "--stage", "grant", "--from", from, "--group", group],
                    environment: ProcessInfo.processInfo.environment.merging(
                        ["KAFKA_BOOTSTRAP_SERVERS": TestServices.bootstrapServers, "ENRICHED_TOPIC": input]) { _, new in new },
                    timeout: .seconds(300))
                #expect(replay.status == 0, "appstorectl replay: \(replay.output)")
                grant = try Grant(db: db, policy: policy, input: input, dlq: dlq, changes: changes, group: group)
                try await waitUntil(timeout: .seconds(240)) {
                    let unpublished = try? await db.count("SELECT count(*) FROM outbox WHERE published_at IS NULL")
                    return await applied() == allKeys.count && unpublished == 0
                }
                #expect(grant.stage.restoreWatch.missingEvents == 0, "a restarted grant starts with a clean slate")
                try await grant.stop()

                let actual = try await db.dump(ScratchDatabase.stateTables)
                for (table, rows) in expected { #expect(actual[table] == rows, "table \(table) differs from the truth") }
                #expect(try await TopicReader.readAll(dlq).isEmpty)
            }
        }

        /// Grant as its process runs it: the stage, its publisher and its restore watch, checking every second.
        struct Grant {
            let stage: GrantStage
            let group: ServiceGroup
            let task: Task<Void, any Error>

            init(db: ScratchDatabase, policy: GrantPolicy, input: String, dlq: String, changes: String, group name: String) throws {
                let logger = ScratchDatabase.logger
                let outboxProducer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
                let publisher = OutboxPublisher(
                    store: db.store, producer: outboxProducer, topic: changes, pollInterval: .milliseconds(100), batchSize: 500, logger: logger)
                stage = GrantStage(store: db.store, policy: policy, restoreCheckInterval: .seconds(1), logger: logger) { publisher.notify() }
                let stageProducer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
                let runner = try StageRunner(
                    stage: stage, consumerConfiguration: TestServices.consumerConfiguration(group: name, topics: [input]),
                    producer: stageProducer,
                    configuration: StageRunnerConfiguration(
                        deadLetterTopic: dlq, retry: RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .seconds(1)), maxBatchSize: 100),
                    logger: logger)
                let group = ServiceGroup(
                    services: [outboxProducer, publisher, stage.restoreWatch, stageProducer, runner.consumer, runner], logger: logger)
                self.group = group
                task = Task { try await group.run() }
            }

            func stop() async throws {
                await group.triggerGracefulShutdown()
                try await task.value
            }
        }

        /// Runs a PostgreSQL client program against the local server.
        static func postgres(_ program: String, _ arguments: [String]) async throws {
            let bin = ProcessInfo.processInfo.environment["PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
            let result = try await ManagedProcess.run(
                URL(fileURLWithPath: bin).appendingPathComponent(program),
                [
                    "--host=\(ScratchDatabase.host)", "--port=\(ScratchDatabase.port)",
                    "--username=\(LocalStack.value("POSTGRES_USER", environment: "POSTGRES_USER"))",
                ]
                    + arguments,
                streams: .merged, timeout: .seconds(300))
            guard result.status == 0 else { throw TestSupportError("\(program) failed: \(result.output)") }
        }

        /// Replaces database `name` by the backup, as an operator restores one: into a new database
        /// first, then swapped in (the connections to the old one are ended).
        static func restore(_ name: String, from backup: URL) async throws {
            let restored = name + "_restored"
            try await ScratchDatabase.admin("CREATE DATABASE \(restored)")
            try await postgres("pg_restore", ["--dbname=\(restored)", "--no-owner", backup.path])
            try await ScratchDatabase.admin("DROP DATABASE \(name) WITH (FORCE)")
            try await ScratchDatabase.admin("ALTER DATABASE \(restored) RENAME TO \(name)")
        }
    }
}
