import ArgumentParser
import Foundation
import PipelineOperations

/// `appstorectl topics`: the topic catalogue as configuration.
struct TopicsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "topics",
        abstract: "Create the catalogue's topics and report drift (schemas/topics.json).",
        subcommands: [TopicsApply.self]
    )
}

/// `appstorectl topics apply`: creates missing topics with their partitions, replication and
/// configs, sets configs that differ, and reports what it cannot repair. Idempotent.
struct TopicsApply: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Bring the cluster's topics to the catalogue: create what is missing, set configs that differ, report drift.",
        discussion: """
            The catalogue is --catalogue FILE, else schemas/topics.json found from the working directory or upwards \
            from this executable, else /usr/share/appstore-entitlements/topics.json. Partition counts and the \
            replication of existing topics are never changed: a difference is reported as drift (exit status 1) \
            with what to do. The catalogue's replication factor (3) and min.insync.replicas (2) are for production; \
            a cluster with fewer brokers needs an explicit --replication-factor-cap N (or \
            TOPICS_MAX_REPLICATION_FACTOR=N), which also lowers min.insync.replicas to at most N — without it the \
            tool refuses to create under-replicated topics. Broker settings come from KAFKA_BOOTSTRAP_SERVERS (and \
            KAFKA_PROPERTIES_FILE / KAFKA_PROP_*), as for the stages. Exit status: 0 in sync or changed, 1 when \
            drift remains or the job fails, 2 on bad usage.
            """
    )

    @Option(help: "The topic catalogue (default: schemas/topics.json, searched as described above).")
    var catalogue: String?

    @Option(
        help: ArgumentHelp(
            "Use at most this replication factor, and min.insync.replicas at most this (development clusters).",
            valueName: "N"))
    var replicationFactorCap: Int?

    @Option(help: ArgumentHelp("How long to wait for the broker to answer before failing.", valueName: "SECONDS"))
    var wait: Int = 60

    @Flag(help: "Show the plan without changing anything.")
    var dryRun = false

    @Flag(help: "Print the result as one JSON object.")
    var json = false

    func validate() throws {
        guard wait >= 0 else { throw ValidationError("--wait must be 0 or more seconds (got \(wait))") }
        _ = try cap()
        if let catalogue, !FileManager.default.isReadableFile(atPath: catalogue) {
            throw ValidationError("--catalogue names a file that cannot be read (\(catalogue))")
        }
    }

    /// The replication cap: the flag, else `TOPICS_MAX_REPLICATION_FACTOR`, else none.
    func cap() throws -> Int? {
        if let replicationFactorCap {
            guard replicationFactorCap >= 1 else {
                throw ValidationError("--replication-factor-cap must be at least 1 (got \(replicationFactorCap))")
            }
            return replicationFactorCap
        }
        guard let text = ProcessInfo.processInfo.environment["TOPICS_MAX_REPLICATION_FACTOR"], !text.isEmpty else { return nil }
        guard let value = Int(text), value >= 1 else {
            throw ValidationError("TOPICS_MAX_REPLICATION_FACTOR must be a whole number of at least 1 (got \(text))")
        }
        return value
    }

    func run() async throws {
        let cap = try cap()
        let client = try OperatorEnvironment.kafkaClient()
        do {
            let catalogue = try TopicCatalogue.load(path: try TopicCatalogue.locate(explicit: catalogue))
            let applier = TopicApplier(client: client)
            let plan = try await applier.plan(catalogue: catalogue, replicationCap: cap, wait: .seconds(wait))
            let report = try await applier.apply(plan, catalogue: catalogue, dryRun: dryRun)
            print(json ? report.json : report.text)
            if report.exitStatus != 0 { Foundation.exit(report.exitStatus) }
        } catch let error as TopicCatalogueError {
            OperatorEnvironment.fail(OperationsError(.init(rawValue: error.code), error.message))
        } catch let error as TopicPlanError {
            OperatorEnvironment.fail(OperationsError(.init(rawValue: error.code), error.message))
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
