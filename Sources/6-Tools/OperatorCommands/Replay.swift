import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
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
            as for the stages; \(PipelineNames.variables) override topic and group names.
            """
    )

    @Option(help: "The stage to replay: verify, enrich or grant.")
    var stage: String

    @Option(help: "Replay records written at or after this time: \(OperatorTime.syntax).")
    var from: String?

    @Option(help: "Replay from this offset: a number, or earliest.")
    var offset: String?

    @Option(help: "Only these input partitions (repeatable); all by default.")
    var partition: [Int32] = []

    @Option(help: "The stage's consumer group, when the deployment changed it (KAFKA_GROUP_ID).")
    var group: String?

    @Flag(help: "Show the plan without changing anything.")
    var dryRun = false

    @Flag(help: "Print the plan and outcome as one JSON object (stage, group, topic, from, dryRun, applied, recordsToReprocess, partitions).")
    var json = false

    func validate() throws {
        guard (from == nil) != (offset == nil) else { throw ValidationError("give exactly one of --from TIME and --offset N|earliest") }
        if let from, OperatorTime.parse(from) == nil { throw ValidationError("--from must be \(OperatorTime.syntax) (got \(from))") }
        if let offset, offset != "earliest", Int64(offset).map({ $0 >= 0 }) != true {
            throw ValidationError("--offset must be a non-negative number or earliest (got \(offset))")
        }
        _ = try OperatorEnvironment.stage(stage)
    }

    /// `replay --json`.
    struct Output: OperatorJSONObject {
        struct Partition: OperatorJSONObject {
            var partition: Int32
            var committed: Int64?
            var target: Int64
        }
        var stage: String
        var group: String
        var topic: String
        /// `time`, `earliest` or `offset`.
        var from: String
        /// The time `--from` resolved to (relative ages are resolved against now).
        var fromTime: Date?
        var fromOffset: Int64?
        var dryRun: Bool
        var applied: Bool
        var recordsToReprocess: Int64
        var partitions: [Partition]
    }

    func run() async throws {
        let stageInfo = try OperatorEnvironment.stage(stage)
        let start: ReplayStart =
            if let from, let time = OperatorTime.parse(from) { .time(time) } else if offset == "earliest" { .earliest } else {
                .offset(Int64(offset ?? "0") ?? 0)
            }
        do {
            let replay = StageReplay(offsets: KafkaGroupOffsets(configuration: try OperatorEnvironment.kafkaClient()))
            let plan = try await replay.plan(
                stage: stageInfo, group: group, from: start, partitions: partition.isEmpty ? nil : partition)
            if !json {
                var since = ""
                if case .time(let time) = start { since = ", from \(Timestamp.iso8601(time))" }
                print("stage \(plan.stage.name), group \(plan.group), topic \(plan.stage.inputTopic)\(since)")
                print("partition".padded(10) + "committed".padded(12) + "replay from")
                for entry in plan.entries {
                    print(String(entry.partition.partition).padded(10) + (entry.current.map(String.init) ?? "-").padded(12) + String(entry.target))
                }
                print("\(plan.recordsToReprocess) record(s) will be processed again")
            }
            if !dryRun { try await replay.apply(plan) }
            if json {
                var output = Output(
                    stage: plan.stage.name, group: plan.group, topic: plan.stage.inputTopic, from: "offset", dryRun: dryRun, applied: !dryRun,
                    recordsToReprocess: plan.recordsToReprocess,
                    partitions: plan.entries.map { .init(partition: $0.partition.partition, committed: $0.current, target: $0.target) })
                switch start {
                case .time(let time):
                    output.from = "time"
                    output.fromTime = time
                case .earliest: output.from = "earliest"
                case .offset(let offset): output.fromOffset = offset
                }
                OperatorEnvironment.printJSON(output)
            } else {
                print(dryRun ? "dry run: nothing changed" : "done: start \(plan.stage.name) again to replay")
            }
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
