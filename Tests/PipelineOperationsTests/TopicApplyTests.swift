import Foundation
import KafkaClient
import PipelineOperations
import TestSupport
import Testing

/// `topics apply` against the local broker, with catalogues of uniquely named topics (never the
/// real catalogue's: other tests use those).
@Suite("topics apply on the broker", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct TopicApplyTests {
    let client = TestServices.clientConfiguration("tests-topics")

    /// Three topics like the real catalogue's (production replication, capped to 1 when applied).
    static func uniqueCatalogue() -> TopicCatalogue {
        let id = UUID().uuidString.prefix(8).lowercased()
        return TopicCatalogue(
            topics: [
                CatalogueTopic(
                    name: "topics-apply-\(id).raw", partitions: 4, replicationFactor: 3,
                    configs: ["min.insync.replicas": "2", "retention.ms": "3024000000", "cleanup.policy": "delete"]),
                CatalogueTopic(
                    name: "topics-apply-\(id).changes", partitions: 3, replicationFactor: 3,
                    configs: ["min.insync.replicas": "2", "retention.ms": "3024000000", "cleanup.policy": "delete"]),
                CatalogueTopic(
                    name: "topics-apply-\(id).dlq", partitions: 2, replicationFactor: 3,
                    configs: ["min.insync.replicas": "2", "retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"]),
            ],
            source: "test catalogue \(id)")
    }

    func apply(_ catalogue: TopicCatalogue, dryRun: Bool = false) async throws -> TopicApplyReport {
        let applier = TopicApplier(client: client)
        let plan = try await applier.plan(catalogue: catalogue, replicationCap: 1, wait: .seconds(10))
        return try await applier.apply(plan, catalogue: catalogue, dryRun: dryRun)
    }

    @Test("the first apply creates every topic with its partitions and configs; the second changes nothing")
    func createThenNothing() async throws {
        let catalogue = Self.uniqueCatalogue()
        let first = try await apply(catalogue)
        #expect(first.outcome == .changed && first.created == 3 && first.changed == 0 && first.drifted == 0)
        let admin = KafkaAdmin(configuration: client)
        let layout = try await admin.clusterLayout()
        for topic in catalogue.topics {
            #expect(layout.topics[topic.name]?.partitions == topic.partitions, "\(topic.name)")
        }
        let configs = try await admin.describeTopicConfigs(catalogue.topics.map(\.name))
        for topic in catalogue.topics {
            #expect(configs[topic.name]?["retention.ms"] == topic.configs["retention.ms"], "\(topic.name)")
            #expect(configs[topic.name]?["min.insync.replicas"] == "1", "capped with the replication factor: \(topic.name)")
        }

        let second = try await apply(catalogue)
        #expect(second.outcome == .inSync && second.created == 0 && second.changed == 0 && second.drifted == 0)
        #expect(second.summary == "topics: 3 in the catalogue, 0 created, 0 changed, 0 drifted — nothing to do")
        #expect(second.exitStatus == 0)
    }

    @Test("a config changed behind its back is set again; then nothing to do")
    func configRepaired() async throws {
        let catalogue = Self.uniqueCatalogue()
        _ = try await apply(catalogue)
        let raw = catalogue.topics[0].name
        try await KafkaAdmin(configuration: client).alterTopicConfigs([raw: ["retention.ms": "86400000"]])
        let repaired = try await apply(catalogue)
        #expect(repaired.outcome == .changed && repaired.changed == 1)
        #expect(repaired.topics[0].configChanges == [TopicConfigChange(name: "retention.ms", from: "86400000", to: "3024000000")])
        #expect(try await apply(catalogue).outcome == .inSync)
    }

    @Test("a topic that exists with fewer partitions is drift: reported, exit status 1, not changed")
    func fewerPartitions() async throws {
        let catalogue = Self.uniqueCatalogue()
        let raw = catalogue.topics[0]
        try await KafkaAdmin(configuration: client).createTopics([.init(name: raw.name, partitions: 1)])
        let report = try await apply(catalogue)
        #expect(report.outcome == .drift && report.exitStatus == 1 && report.drifted == 1)
        let entry = try #require(report.topics.first { $0.name == raw.name })
        #expect(entry.state == "drift" && entry.clusterPartitions == 1 && entry.partitions == raw.partitions)
        #expect(entry.drift.map(\.kind) == [.fewerPartitions])
        #expect(report.created == 2)
        #expect(try await KafkaAdmin(configuration: client).clusterLayout().topics[raw.name]?.partitions == 1)
    }

    @Test("a dry run creates nothing and says what it would do")
    func dryRun() async throws {
        let catalogue = Self.uniqueCatalogue()
        let report = try await apply(catalogue, dryRun: true)
        #expect(report.outcome == .pending && report.created == 3)
        #expect(report.topics.allSatisfy { $0.state == "would_create" })
        let existing = try await KafkaAdmin(configuration: client).clusterLayout().topics
        #expect(catalogue.topics.allSatisfy { existing[$0.name] == nil })
    }
}

/// The built `appstorectl topics apply` as a process, twice in a row.
@Suite("appstorectl topics apply as a process", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct TopicsApplyCommandTests {
    /// Runs the built `appstorectl` against the local broker.
    static func run(_ arguments: [String]) async throws -> CommandResult {
        var environment = ProcessInfo.processInfo.environment
        environment["KAFKA_BOOTSTRAP_SERVERS"] = TestServices.bootstrapServers
        return try await BuiltProducts.run("appstorectl", arguments, environment: environment, timeout: .seconds(120))
    }

    @Test("run twice: the first creates the topics, the second says nothing changed")
    func twice() async throws {
        let catalogue = TopicApplyTests.uniqueCatalogue()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("topics-\(UUID().uuidString.prefix(8)).json")
        let topics = catalogue.topics.map { topic -> [String: Any] in
            ["name": topic.name, "partitions": topic.partitions, "replicationFactor": topic.replicationFactor, "configs": topic.configs]
        }
        try JSONSerialization.data(withJSONObject: ["topics": topics]).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let arguments = ["topics", "apply", "--catalogue", file.path, "--replication-factor-cap", "1", "--wait", "20"]

        let first = try await Self.run(arguments)
        print("$ appstorectl \(arguments.joined(separator: " "))\n\(first.output)")
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("replication capped at 1"))
        #expect(first.output.contains("topics: 3 in the catalogue, 3 created, 0 changed, 0 drifted"))

        let second = try await Self.run(arguments)
        print("$ appstorectl \(arguments.joined(separator: " "))\n\(second.output)")
        #expect(second.status == 0, "\(second.output)")
        #expect(second.output.contains("topics: 3 in the catalogue, 0 created, 0 changed, 0 drifted — nothing to do"))

        let json = try await Self.run(arguments + ["--json", "--dry-run"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["outcome"] as? String == "in_sync")
        #expect(object["created"] as? Int == 0 && object["changed"] as? Int == 0 && object["drifted"] as? Int == 0)

        let unusable = try await Self.run(["topics", "apply", "--catalogue", file.path, "--replication-factor-cap", "0"])
        #expect(unusable.status == 2, "\(unusable.output)")
    }
}
