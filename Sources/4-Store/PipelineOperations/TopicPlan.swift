import KafkaClient

/// What the broker told us about the existing topics' configs.
public enum ObservedTopicConfigs: Sendable, Hashable {
    /// Each existing topic's configs (a missing key: not set on that topic).
    case described([String: [String: String]])
    /// The broker cannot say (it lacks DescribeConfigs): configs are neither compared nor changed.
    case unknown(reason: String)
}

/// A config whose value on the cluster differs from the catalogue's.
public struct TopicConfigChange: Sendable, Hashable, Codable {
    public var name: String
    /// The value on the cluster; `nil` when it is not set there.
    public var from: String?
    public var to: String

    public init(name: String, from: String?, to: String) {
        self.name = name
        self.from = from
        self.to = to
    }
}

/// A difference `topics apply` cannot repair by itself, with what the operator can do.
public struct TopicDrift: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case fewerPartitions = "fewer_partitions"
        case morePartitions = "more_partitions"
        case replicationFactor = "replication_factor"
    }

    public var kind: Kind
    public var message: String
}

/// What `topics apply` will do to bring the cluster to the catalogue, worked out without changing
/// anything: which topics to create, which configs to set, and what drift remains.
public struct TopicPlan: Sendable {
    public enum Action: Sendable, Hashable {
        case create
        case setConfigs([TopicConfigChange])
        case none
    }

    public struct Entry: Sendable, Hashable {
        /// The topic as it should be on this cluster (replication capped when a cap is given).
        public var topic: CatalogueTopic
        /// The catalogue's own replication factor, before any cap.
        public var catalogueReplicationFactor: Int
        /// The topic on the cluster; `nil` when it does not exist yet.
        public var existing: KafkaAdmin.TopicLayout?
        public var action: Action
        public var drift: [TopicDrift]
        /// Why the topic's configs could not be compared, when they could not.
        public var configsUnknown: String?
    }

    public var entries: [Entry]
    public var brokerCount: Int
    public var replicationCap: Int?

    /// Compares the catalogue with the cluster.
    /// - Parameters:
    ///   - replicationCap: the highest replication factor to use (a development cluster with fewer
    ///     brokers than production); `nil` uses the catalogue's.
    /// - Throws: ``TopicPlanError/notEnoughBrokers`` when a topic must be created with more
    ///   replicas than the cluster has brokers: Kafka would refuse, and creating it with fewer
    ///   without being told to would silently weaken durability.
    public static func compute(
        catalogue: TopicCatalogue, replicationCap: Int?, cluster: KafkaAdmin.ClusterLayout, configs: ObservedTopicConfigs
    ) throws(TopicPlanError) -> TopicPlan {
        var entries: [Entry] = []
        for catalogued in catalogue.topics {
            let topic = catalogued.capped(at: replicationCap)
            guard let existing = cluster.topics[topic.name] else {
                entries.append(
                    Entry(
                        topic: topic, catalogueReplicationFactor: catalogued.replicationFactor, existing: nil, action: .create,
                        drift: [], configsUnknown: nil))
                continue
            }
            var drift: [TopicDrift] = []
            if existing.partitions < topic.partitions {
                drift.append(
                    TopicDrift(
                        kind: .fewerPartitions,
                        message: "\(existing.partitions) partitions, the catalogue has \(topic.partitions): not added automatically, "
                            + "because adding partitions moves keys to other partitions and breaks per-subscription order for "
                            + "records in flight; stop the producers and let the consumers drain, then add them "
                            + "(kafka-topics.sh --alter --partitions \(topic.partitions)), or recreate the topic; "
                            + "some brokers (Tansu) cannot add partitions at all"))
            } else if existing.partitions > topic.partitions {
                drift.append(
                    TopicDrift(
                        kind: .morePartitions,
                        message: "\(existing.partitions) partitions, the catalogue has \(topic.partitions): partitions are never "
                            + "removed; set \(existing.partitions) in the catalogue so stage replica limits follow it"))
            }
            // min.insync.replicas above the replicas a topic really has would refuse every acks=all
            // write: it waits until the replication factor is repaired.
            let heldBack = topic.minInsyncReplicas.map { $0 > existing.replicationFactor } ?? false
            if existing.replicationFactor != topic.replicationFactor {
                drift.append(
                    TopicDrift(
                        kind: .replicationFactor,
                        message: "replication factor \(existing.replicationFactor), the catalogue has \(topic.replicationFactor)"
                            + (replicationCap.map { " (capped at \($0))" } ?? "")
                            + ": change it with a partition reassignment (kafka-reassign-partitions.sh)"
                            + (heldBack
                                ? "; min.insync.replicas \(topic.minInsyncReplicas ?? 0) is not set until then, as it would refuse every acks=all write"
                                : "")))
            }
            var action = Action.none
            var unknown: String?
            switch configs {
            case .unknown(let reason):
                unknown = reason
            case .described(let described):
                let current = described[topic.name] ?? [:]
                let changes = topic.configs.keys.sorted().compactMap { key -> TopicConfigChange? in
                    let wanted = topic.configs[key]!
                    if key == CatalogueTopic.minInsyncReplicasKey && heldBack { return nil }
                    return current[key] == wanted ? nil : TopicConfigChange(name: key, from: current[key], to: wanted)
                }
                if !changes.isEmpty { action = .setConfigs(changes) }
            }
            entries.append(
                Entry(
                    topic: topic, catalogueReplicationFactor: catalogued.replicationFactor, existing: existing, action: action,
                    drift: drift, configsUnknown: unknown))
        }
        let short = entries.filter { $0.action == .create && $0.topic.replicationFactor > cluster.brokerCount }
        if let first = short.first {
            throw .notEnoughBrokers(
                brokers: cluster.brokerCount, replicationFactor: first.topic.replicationFactor, topics: short.map(\.topic.name))
        }
        return TopicPlan(entries: entries, brokerCount: cluster.brokerCount, replicationCap: replicationCap)
    }

    /// The topics whose replication the cap lowered, with the catalogue's and the applied values.
    public var cappedTopics: [Entry] { entries.filter { $0.topic.replicationFactor < $0.catalogueReplicationFactor } }
}

/// Why no plan could be made.
public enum TopicPlanError: Error, Hashable, Sendable, CustomStringConvertible {
    case notEnoughBrokers(brokers: Int, replicationFactor: Int, topics: [String])

    public var code: String { "topics.not_enough_brokers" }

    public var message: String {
        switch self {
        case .notEnoughBrokers(let brokers, let replicationFactor, let topics):
            "the cluster reports \(brokers) broker(s) but \(topics.count) topic(s) to create need replication factor "
                + "\(replicationFactor) (\(topics.joined(separator: ", "))): start the missing brokers and run again, or, "
                + "for a development cluster only, cap the replication with --replication-factor-cap \(brokers) "
                + "(or TOPICS_MAX_REPLICATION_FACTOR=\(brokers))"
        }
    }

    public var description: String { "\(code): \(message)" }
}
