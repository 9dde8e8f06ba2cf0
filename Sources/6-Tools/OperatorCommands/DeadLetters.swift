import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import StageRuntime

/// `appstorectl dlq`: what a stage dead-lettered and why, and re-injecting it once the cause is fixed.
struct DeadLetters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "List, show and replay a stage's dead letters.",
        subcommands: [List.self, Show.self, Replay.self]
    )

    struct StageOption: ParsableArguments {
        @Option(help: "The stage whose dead letters to use: verify, enrich or grant.")
        var stage: String

        @Flag(help: "Print the result as one JSON object (fields in deploy/README.md, Operations).")
        var json = false

        func validate() throws { _ = try OperatorEnvironment.stage(stage) }

        func queue() throws -> DeadLetterQueue {
            DeadLetterQueue(stage: try OperatorEnvironment.stage(stage), client: try OperatorEnvironment.kafkaClient())
        }
    }

    /// `dlq list --json`.
    struct ListOutput: OperatorJSONObject {
        var stage: String
        var topic: String
        var total: Int
        var notReplayed: Int
        var byCode: [DeadLetterCount]
        var deadLetters: [DeadLetterEntry]
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One line per dead letter (partition/offset, error code, attempts, source, replayed), then counts per code.")

        @OptionGroup var options: StageOption

        func run() async throws {
            do {
                let queue = try options.queue()
                if options.json {
                    // One JSON document: the entries are held (without bodies) to write it.
                    var entries: [DeadLetterEntry] = []
                    var counts: [DeadLetterCount] = []
                    try await queue.forEachPage { page in
                        entries += page.map { DeadLetterEntry($0) }
                        counts = DeadLetterCount.adding(page, to: counts)
                    }
                    OperatorEnvironment.printJSON(
                        ListOutput(
                            stage: queue.stage.name, topic: queue.stage.deadLetterTopic, total: entries.count,
                            notReplayed: counts.reduce(0) { $0 + $1.notReplayed }, byCode: counts, deadLetters: entries))
                    return
                }
                // Printed page by page as the queue is read: memory stays bounded however long it is.
                print("at".padded(10) + "code".padded(26) + "attempts".padded(10) + "failed at".padded(26) + "replayed".padded(10) + "source")
                var counts: [DeadLetterCount] = []
                try await queue.forEachPage { page in
                    for letter in page {
                        print(
                            "\(letter.message.partition)/\(letter.message.offset)".padded(10) + letter.code.padded(26)
                                + String(letter.attempts).padded(10) + letter.lastFailureAt.padded(26)
                                + (letter.replayed ? "yes" : "no").padded(10) + letter.source)
                    }
                    counts = DeadLetterCount.adding(page, to: counts)
                }
                let total = counts.reduce(0) { $0 + $1.total }
                let byCode = counts.map { "\($0.code): \($0.total) (\($0.notReplayed) not replayed)" }
                print("\(total) dead letter(s)" + (byCode.isEmpty ? "" : " — " + byCode.joined(separator: ", ")))
            } catch {
                OperatorEnvironment.fail(error)
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every header and the body of one dead letter.")

        @OptionGroup var options: StageOption
        @Option(help: "The dead letter's partition in the dead-letter topic.") var partition: Int32
        @Option(help: "The dead letter's offset in the dead-letter topic.") var offset: Int64

        func run() async throws {
            do {
                guard let letter = try await options.queue().letter(partition: partition, offset: offset) else {
                    throw OperationsError(.deadLetterNotFound, "no dead letter at \(partition)/\(offset)")
                }
                if options.json {
                    OperatorEnvironment.printJSON(DeadLetterEntry(letter, full: true))
                    return
                }
                print("key: \(letter.message.keyString ?? "-")")
                for header in letter.message.headers { print("\(header.key): \(header.stringValue ?? "(null)")") }
                print("")
                print(String(decoding: letter.message.value, as: UTF8.self))
            } catch {
                OperatorEnvironment.fail(error)
            }
        }
    }

    /// `dlq replay --json`.
    struct ReplayOutput: OperatorJSONObject {
        var stage: String
        var dryRun: Bool
        /// The dead letters sent back (with --dry-run: that would be sent).
        var replayed: [DeadLetterEntry]
        var skipped: Int
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send dead letters back to the topic they came from, once the cause is fixed.",
            discussion: """
                Without options, replays every dead letter no earlier replay took, and remembers that. --code takes \
                the dead letters of that code no earlier replay took, and remembers that too: the same command run \
                again sends nothing. --include-replayed takes them again. --partition/--offset takes one record \
                explicitly (even if replayed before; not remembered). --dry-run prints what would be sent and \
                sends and remembers nothing.
                """
        )

        @OptionGroup var options: StageOption
        @Option(help: "Only dead letters with this error code (repeatable).") var code: [String] = []
        @Option(help: "Only the dead letter at this partition (with --offset).") var partition: Int32?
        @Option(help: "Only the dead letter at this offset (with --partition).") var offset: Int64?
        @Flag(help: "Also take dead letters an earlier replay took.") var includeReplayed = false
        @Flag(help: "Show what would be sent; send nothing and remember nothing.") var dryRun = false

        func validate() throws {
            guard (partition == nil) == (offset == nil) else { throw ValidationError("--partition and --offset go together") }
        }

        func run() async throws {
            do {
                let queue = try options.queue()
                let filter = DeadLetterFilter(
                    codes: Set(code), record: partition.flatMap { p in offset.map { (p, $0) } })
                let outcome: DeadLetterQueue.ReplayOutcome
                // Text is printed page by page and nothing is kept; --json keeps what it must print.
                let json = options.json
                let printPage: ([DeadLetter]) -> Void = { page in
                    guard !json else { return }
                    for letter in page {
                        print(
                            "\(dryRun ? "would replay" : "replayed") \(letter.message.partition)/\(letter.message.offset) (\(letter.code)) → \(letter.sourceTopic ?? queue.stage.inputTopic)"
                        )
                    }
                }
                if dryRun {
                    outcome = try await queue.plan(filter: filter, includeReplayed: includeReplayed, keepLetters: json, each: printPage)
                } else {
                    let producer = try KafkaProducer(
                        configuration: KafkaProducerConfiguration(client: try OperatorEnvironment.kafkaClient()),
                        logger: OperatorEnvironment.logger)
                    outcome = try await queue.replay(
                        filter: filter, includeReplayed: includeReplayed, producer: producer, keepLetters: json, each: printPage)
                    await producer.close()
                }
                if json {
                    OperatorEnvironment.printJSON(
                        ReplayOutput(
                            stage: queue.stage.name, dryRun: dryRun, replayed: outcome.replayed.map { DeadLetterEntry($0) }, skipped: outcome.skipped)
                    )
                    return
                }
                print(
                    dryRun
                        ? "dry run: \(outcome.replayedCount) would be replayed, \(outcome.skipped) left alone; nothing sent"
                        : "\(outcome.replayedCount) replayed, \(outcome.skipped) left alone")
            } catch {
                OperatorEnvironment.fail(error)
            }
        }
    }
}
