import ArgumentParser
import EntitlementStore
import Foundation
import PipelineOperations
import RecoveryJobs
import StageRuntime

/// `appstorectl status`: is the pipeline healthy, and if not, what needs attention.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Per stage: group members, lag per partition, last input record, dead letters by code; the outbox backlog.",
        discussion: """
            Reads the broker (KAFKA_BOOTSTRAP_SERVERS, KAFKA_PROPERTIES_FILE / KAFKA_PROP_*; \(PipelineNames.variables) \
            override topic and group names) and, when any POSTGRES_* variable is set, grant's outbox \
            (\(RecoveryEnvironment.databaseVariables)) and the newest mass renewal extensions (extend-all), open or \
            finished. Changes nothing. Lag is the input's end minus the group's committed \
            offset; where it cannot be told it says unknown. Exit status: 0 healthy; 1 when something needs attention \
            (records waiting in a stage with no group member, dead letters not yet replayed, an outbox row older than \
            --max-outbox-age, a part that could not be read); 2 on bad usage.
            """)

    @Option(help: "Only this stage (repeatable): verify, enrich or grant.")
    var stage: [String] = []

    @Option(help: ArgumentHelp("An unpublished outbox row older than this needs attention.", valueName: "SECONDS"))
    var maxOutboxAge: Double = 60

    @Flag(help: "Print the status as one JSON object (fields in deploy/README.md, Operations).")
    var json = false

    func validate() throws {
        for name in stage { _ = try OperatorEnvironment.stage(name) }
        guard maxOutboxAge >= 0 else { throw ValidationError("--max-outbox-age must not be negative") }
    }

    static var databaseConfigured: Bool {
        ProcessInfo.processInfo.environment.keys.contains { $0.hasPrefix("POSTGRES_") }
    }

    func run() async throws {
        let stages = stage.isEmpty ? PipelineNames.stages() : try stage.map(OperatorEnvironment.stage)
        let reader = PipelineStatusReader(client: try OperatorEnvironment.kafkaClient())
        async let statuses = reader.read(stages)
        var outbox: OutboxBacklog?
        var outboxError: String?
        var massExtensions: [MassRenewalExtensionStatus]?
        if Self.databaseConfigured {
            do {
                let (pending, recorded) = try await RecoveryEnvironment.withDatabase { database in
                    let pending = try await EntitlementStore(client: database, logger: OperatorEnvironment.logger).outboxBacklog()
                    // Mass extensions of every app and environment; a schema without them (before migration 0017) shows none.
                    var recorded: [MassRenewalExtensionStatus]?
                    for environment in ["Production", "Sandbox"] {
                        guard
                            let found = try? await MassRenewalExtensionJob.recorded(
                                environment: environment, limit: 5, database: database, logger: OperatorEnvironment.logger)
                        else { continue }
                        recorded = (recorded ?? []) + found
                    }
                    return (pending, recorded)
                }
                outbox = OutboxBacklog(
                    unpublished: Int64(pending.unpublishedRows), oldestCreatedAt: pending.oldestCreatedAt,
                    oldestAgeSeconds: pending.oldestCreatedAt == nil ? nil : pending.oldestAgeSeconds)
                massExtensions = recorded
            } catch {
                outboxError = (error as? OperationsError).map { "\($0.code): \($0.message)" } ?? "\(error)"
            }
        }
        let health = PipelineHealth(
            stages: await statuses, outbox: outbox, outboxError: outboxError, maxOutboxAgeSeconds: maxOutboxAge, massExtensions: massExtensions)
        if json {
            OperatorEnvironment.printJSON(health)
        } else {
            print(health.text)
        }
        if !health.healthy { throw ExitCode(1) }
    }
}
