import KafkaClient
import PipelineOperations
import Testing

@Suite("Topic plan: catalogue against cluster, without a broker")
struct TopicPlanTests {
    static let raw = CatalogueTopic(
        name: "raw.v1", partitions: 8, replicationFactor: 3,
        configs: ["min.insync.replicas": "2", "retention.ms": "3024000000", "cleanup.policy": "delete"])
    static let dlq = CatalogueTopic(
        name: "dlq.v1", partitions: 2, replicationFactor: 3,
        configs: ["min.insync.replicas": "2", "retention.ms": "-1", "retention.bytes": "-1"])
    static let catalogue = TopicCatalogue(topics: [raw, dlq], source: "test.json")

    static func cluster(brokers: Int = 3, _ topics: [String: (Int, Int)] = [:]) -> KafkaAdmin.ClusterLayout {
        KafkaAdmin.ClusterLayout(
            brokerCount: brokers,
            topics: topics.mapValues { KafkaAdmin.TopicLayout(partitions: $0.0, replicationFactor: $0.1) })
    }

    static func report(_ plan: TopicPlan, dryRun: Bool = false, created: Set<String> = []) -> TopicApplyReport {
        TopicApplyReport(plan: plan, catalogue: "test.json", dryRun: dryRun, created: created)
    }

    @Test("an empty cluster: every topic is created with the catalogue's layout and configs")
    func createAll() throws {
        let plan = try TopicPlan.compute(catalogue: Self.catalogue, replicationCap: nil, cluster: Self.cluster(), configs: .described([:]))
        #expect(plan.entries.map(\.action) == [.create, .create])
        #expect(plan.entries.map(\.topic) == [Self.raw, Self.dlq])
        let report = Self.report(plan, created: ["raw.v1", "dlq.v1"])
        #expect(report.outcome == .changed && report.created == 2 && report.exitStatus == 0)
        #expect(report.summary == "topics: 2 in the catalogue, 2 created, 0 changed, 0 drifted")
    }

    @Test("a cluster equal to the catalogue: nothing to do, said in one line")
    func inSync() throws {
        let plan = try TopicPlan.compute(
            catalogue: Self.catalogue, replicationCap: nil, cluster: Self.cluster(["raw.v1": (8, 3), "dlq.v1": (2, 3)]),
            configs: .described(["raw.v1": Self.raw.configs.merging(["segment.ms": "1"]) { a, _ in a }, "dlq.v1": Self.dlq.configs]))
        #expect(plan.entries.map(\.action) == [.none, .none])
        let report = Self.report(plan)
        #expect(report.outcome == .inSync && report.exitStatus == 0)
        #expect(report.summary == "topics: 2 in the catalogue, 0 created, 0 changed, 0 drifted — nothing to do")
        #expect(report.text == report.summary)
    }

    @Test("configs that differ or are not set are set; the others are left alone")
    func configChanges() throws {
        let plan = try TopicPlan.compute(
            catalogue: Self.catalogue, replicationCap: nil, cluster: Self.cluster(["raw.v1": (8, 3), "dlq.v1": (2, 3)]),
            configs: .described([
                "raw.v1": ["min.insync.replicas": "2", "retention.ms": "604800000", "cleanup.policy": "delete"], "dlq.v1": Self.dlq.configs,
            ]))
        #expect(plan.entries[0].action == .setConfigs([TopicConfigChange(name: "retention.ms", from: "604800000", to: "3024000000")]))
        #expect(plan.entries[1].action == .none)
        let dry = Self.report(plan, dryRun: true)
        #expect(dry.outcome == .pending && dry.changed == 1 && dry.exitStatus == 0)
        #expect(dry.text.contains("would set retention.ms 604800000 → 3024000000"))
    }

    @Test("fewer or more partitions than catalogued is drift, never repaired, exit status 1")
    func partitionDrift() throws {
        let plan = try TopicPlan.compute(
            catalogue: Self.catalogue, replicationCap: nil, cluster: Self.cluster(["raw.v1": (4, 3), "dlq.v1": (6, 3)]),
            configs: .described(["raw.v1": Self.raw.configs, "dlq.v1": Self.dlq.configs]))
        #expect(plan.entries.map { $0.drift.map(\.kind) } == [[.fewerPartitions], [.morePartitions]])
        #expect(plan.entries.map(\.action) == [.none, .none])
        let report = Self.report(plan)
        #expect(report.outcome == .drift && report.drifted == 2 && report.exitStatus == 1)
        #expect(report.topics.map(\.state) == ["drift", "drift"])
        #expect(report.text.contains("kafka-topics.sh --alter --partitions 8"))
    }

    @Test("a topic with fewer replicas: drift, and min.insync.replicas is held back so writes keep working")
    func replicationDrift() throws {
        let plan = try TopicPlan.compute(
            catalogue: Self.catalogue, replicationCap: nil, cluster: Self.cluster(["raw.v1": (8, 1), "dlq.v1": (2, 3)]),
            configs: .described(["raw.v1": [:], "dlq.v1": Self.dlq.configs]))
        #expect(plan.entries[0].drift.map(\.kind) == [.replicationFactor])
        guard case .setConfigs(let changes) = plan.entries[0].action else {
            Issue.record("no config changes")
            return
        }
        #expect(changes.map(\.name) == ["cleanup.policy", "retention.ms"])
    }

    @Test("creating with more replicas than brokers is refused unless the replication is capped")
    func brokersAndCap() throws {
        #expect(throws: TopicPlanError.notEnoughBrokers(brokers: 1, replicationFactor: 3, topics: ["raw.v1", "dlq.v1"])) {
            try TopicPlan.compute(catalogue: Self.catalogue, replicationCap: nil, cluster: Self.cluster(brokers: 1), configs: .described([:]))
        }
        let plan = try TopicPlan.compute(catalogue: Self.catalogue, replicationCap: 1, cluster: Self.cluster(brokers: 1), configs: .described([:]))
        #expect(plan.entries.allSatisfy { $0.topic.replicationFactor == 1 && $0.topic.minInsyncReplicas == 1 })
        #expect(plan.cappedTopics.count == 2)
        #expect(Self.report(plan, created: ["raw.v1", "dlq.v1"]).text.hasPrefix("replication capped at 1"))
    }

    @Test("a broker without DescribeConfigs: configs reported unknown, never changed; partitions still checked")
    func unknownConfigs() throws {
        let plan = try TopicPlan.compute(
            catalogue: Self.catalogue, replicationCap: nil, cluster: Self.cluster(["raw.v1": (8, 3), "dlq.v1": (1, 3)]),
            configs: .unknown(reason: "the broker does not support DescribeConfigs"))
        #expect(plan.entries.map(\.action) == [.none, .none])
        #expect(plan.entries.allSatisfy { $0.configsUnknown == "the broker does not support DescribeConfigs" })
        let report = Self.report(plan)
        #expect(report.outcome == .drift && report.configsUnknown == 2)
        #expect(report.topics[0].configs == "unknown (the broker does not support DescribeConfigs)")
        #expect(report.text.contains("raw.v1") && report.text.contains("configs unknown (the broker does not support DescribeConfigs)"))
    }
}
