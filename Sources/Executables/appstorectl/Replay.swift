import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import StageRuntime

/// `appstorectl replay`: re-runs a stopped stage from a point in time or an offset by resetting its
/// consumer group. The stages are idempotent, so a replay converges to the same state.
struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reset a stage's consumer group so the stage re-runs its input from a time or an offset.",
        discussion: """
            Stop every instance of the stage first: Kafka refuses new offsets while the group has a running \
            member. Prints, per input partition, the group's offset now and after; --dry-run changes nothing. \
            Broker settings come from KAFKA_BOOTSTRAP_SERVERS (and KAFKA_PROPERTIES_FILE / KAFKA_PROP_*), \
            as for the stages.
            """
    )

    @Option(help: "The stage to replay: verify, enrich or grant.")
    var stage: String

    @Option(help: "Replay records written at or after this ISO 8601 time (e.g. 2026-11-21T10:00:00Z).")
    var from: String?

    @Option(help: "Replay from this offset: a number, or earliest.")
    var offset: String?

    @Option(help: "Only these input partitions (repeatable); all by default.")
    var partition: [Int32] = []

    @Option(help: "The stage's consumer group, when the deployment changed it (KAFKA_GROUP_ID).")
    var group: String?

    @Flag(help: "Show the plan without changing anything.")
    var dryRun = false

    func validate() throws {
        guard (from == nil) != (offset == nil) else { throw ValidationError("give exactly one of --from TIME and --offset N|earliest") }
        if let from, Self.parseTime(from) == nil { throw ValidationError("--from must be an ISO 8601 time, e.g. 2026-11-21T10:00:00Z (got \(from))") }
        if let offset, offset != "earliest", Int64(offset).map({ $0 >= 0 }) != true {
            throw ValidationError("--offset must be a non-negative number or earliest (got \(offset))")
        }
        _ = try OperatorEnvironment.stage(stage)
    }

    static func parseTime(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }

    func run() async throws {
        let stageInfo = try OperatorEnvironment.stage(stage)
        let start: ReplayStart =
            if let from, let time = Self.parseTime(from) { .time(time) }
            else if offset == "earliest" { .earliest }
            else { .offset(Int64(offset ?? "0") ?? 0) }
        do {
            let replay = StageReplay(offsets: KafkaGroupOffsets(configuration: try OperatorEnvironment.kafkaClient()))
            let plan = try await replay.plan(
                stage: stageInfo, group: group, from: start, partitions: partition.isEmpty ? nil : partition)
            print("stage \(plan.stage.name), group \(plan.group), topic \(plan.stage.inputTopic)")
            print("partition".padded(10) + "committed".padded(12) + "replay from")
            for entry in plan.entries {
                print(String(entry.partition.partition).padded(10) + (entry.current.map(String.init) ?? "-").padded(12) + String(entry.target))
            }
            print("\(plan.recordsToReprocess) record(s) will be processed again")
            if dryRun {
                print("dry run: nothing changed")
                return
            }
            try await replay.apply(plan)
            print("done: start \(plan.stage.name) again to replay")
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
