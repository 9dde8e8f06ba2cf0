import Foundation
import KafkaClient

/// `appstorectl topics apply`: brings a cluster's topics to the catalogue. Creates what is missing
/// (partitions, replication, configs), sets configs that differ, and reports what it cannot
/// repair (partition counts, replication of existing topics). Running it again changes nothing.
public struct TopicApplier: Sendable {
    public let client: KafkaClientConfiguration
    /// Per admin request.
    public let requestTimeout: Duration

    public init(client: KafkaClientConfiguration, requestTimeout: Duration = .seconds(30)) {
        self.client = client
        self.requestTimeout = requestTimeout
    }

    /// Reads the cluster's layout, retrying while no broker answers (a container starting beside
    /// the broker) for at most `wait`.
    public func waitForCluster(wait: Duration) async throws -> KafkaAdmin.ClusterLayout {
        let deadline = ContinuousClock.now + wait
        // librdkafka would print every refused connection on stderr while the broker starts; the
        // last error is in the message below instead.
        var probe = client
        probe.properties["log.queue"] = client.properties["log.queue"] ?? "true"
        var lastError: KafkaError?
        repeat {
            let remaining = deadline - .now
            let attempt = min(max(remaining, .seconds(1)), .seconds(5))
            do {
                let layout = try await KafkaAdmin(configuration: probe, timeout: attempt).clusterLayout()
                if layout.brokerCount > 0 { return layout }
                lastError = KafkaError(code: .metadata, reason: "the cluster reports no brokers", isRetriable: true)
            } catch let error as KafkaError where error.isRetriable {
                lastError = error
            }
            guard ContinuousClock.now + .seconds(1) < deadline else { break }
            try await Task.sleep(for: .seconds(1))
        } while ContinuousClock.now < deadline
        throw OperationsError(
            .brokerUnreachable,
            "no broker of \(client.bootstrapServers) answered within \(wait.components.seconds) s"
                + (lastError.map { " (last error: \($0.reason))" } ?? "")
                + "; check KAFKA_BOOTSTRAP_SERVERS, or wait longer with --wait SECONDS")
    }

    /// Compares the catalogue with the cluster without changing anything.
    public func plan(catalogue: TopicCatalogue, replicationCap: Int?, wait: Duration) async throws -> TopicPlan {
        let layout = try await waitForCluster(wait: wait)
        let admin = KafkaAdmin(configuration: client, timeout: requestTimeout)
        let existing = catalogue.topics.map(\.name).filter { layout.topics[$0] != nil }
        let configs: ObservedTopicConfigs
        do {
            configs = .described(try await admin.describeTopicConfigs(existing))
        } catch let error as KafkaError where error.isUnsupportedByBroker {
            configs = .unknown(reason: "the broker does not support DescribeConfigs")
        }
        return try TopicPlan.compute(catalogue: catalogue, replicationCap: replicationCap, cluster: layout, configs: configs)
    }

    /// Carries out `plan` (unless `dryRun`) and reports what happened.
    public func apply(_ plan: TopicPlan, catalogue: TopicCatalogue, dryRun: Bool) async throws -> TopicApplyReport {
        let admin = KafkaAdmin(configuration: client, timeout: requestTimeout)
        var created: Set<String> = []
        if !dryRun {
            let specs = plan.entries.filter { $0.action == .create }.map {
                KafkaAdmin.TopicSpec(
                    name: $0.topic.name, partitions: $0.topic.partitions, replicationFactor: $0.topic.replicationFactor,
                    configs: $0.topic.configs)
            }
            if !specs.isEmpty { created = Set(try await admin.createTopics(specs)) }
            var changes: [String: [String: String]] = [:]
            for entry in plan.entries {
                guard case .setConfigs(let list) = entry.action else { continue }
                changes[entry.topic.name] = Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0.to) })
            }
            try await admin.alterTopicConfigs(changes)
        }
        return TopicApplyReport(plan: plan, catalogue: catalogue.source, dryRun: dryRun, created: created)
    }
}

/// What `topics apply` did (or, in a dry run, would do). Its field names are stable: `--json`
/// prints it as one object.
public struct TopicApplyReport: Sendable, Codable, Hashable {
    public enum Outcome: String, Sendable, Codable, Hashable {
        /// Nothing to do.
        case inSync = "in_sync"
        /// Topics were created or configs set, and nothing else differs.
        case changed
        /// A dry run found work to do.
        case pending
        /// Something differs that `apply` cannot repair (exit status 1).
        case drift
    }

    public struct Topic: Sendable, Codable, Hashable {
        public var name: String
        /// `created`, `would_create`, `configs_set`, `would_set_configs`, `in_sync`, `existed`
        /// (created meanwhile by someone else), or `drift`.
        public var state: String
        public var partitions: Int
        public var clusterPartitions: Int?
        public var replicationFactor: Int
        public var catalogueReplicationFactor: Int
        public var clusterReplicationFactor: Int?
        /// The configs the catalogue sets on it (after any replication cap).
        public var configValues: [String: String]
        /// `known`, or `unknown (<why>)`.
        public var configs: String
        public var configChanges: [TopicConfigChange]
        public var drift: [TopicDrift]
    }

    public var catalogue: String
    public var brokers: Int
    public var replicationFactorCap: Int?
    public var dryRun: Bool
    public var outcome: Outcome
    public var catalogued: Int
    public var created: Int
    public var changed: Int
    public var drifted: Int
    public var configsUnknown: Int
    public var topics: [Topic]
    /// The one-line summary the text output ends with.
    public var summary: String

    /// 0 in sync or changed (or a dry run without drift), 1 when drift remains.
    public var exitStatus: Int32 { outcome == .drift ? 1 : 0 }

    /// The report of `plan`; `created` names the topics this run created (none in a dry run).
    public init(plan: TopicPlan, catalogue: String, dryRun: Bool, created createdNames: Set<String>) {
        self.catalogue = catalogue
        brokers = plan.brokerCount
        replicationFactorCap = plan.replicationCap
        self.dryRun = dryRun
        topics = plan.entries.map { entry in
            var changes: [TopicConfigChange] = []
            let state: String
            switch entry.action {
            case .create:
                state = dryRun ? "would_create" : createdNames.contains(entry.topic.name) ? "created" : "existed"
            case .setConfigs(let list):
                changes = list
                state = !entry.drift.isEmpty ? "drift" : dryRun ? "would_set_configs" : "configs_set"
            case .none:
                state = entry.drift.isEmpty ? "in_sync" : "drift"
            }
            return Topic(
                name: entry.topic.name, state: state, partitions: entry.topic.partitions,
                clusterPartitions: entry.existing?.partitions, replicationFactor: entry.topic.replicationFactor,
                catalogueReplicationFactor: entry.catalogueReplicationFactor,
                clusterReplicationFactor: entry.existing?.replicationFactor, configValues: entry.topic.configs,
                configs: entry.configsUnknown.map { "unknown (\($0))" } ?? "known", configChanges: changes, drift: entry.drift)
        }
        catalogued = plan.entries.count
        created = dryRun ? plan.entries.filter { $0.action == .create }.count : createdNames.count
        changed = topics.filter { !$0.configChanges.isEmpty }.count
        drifted = topics.filter { !$0.drift.isEmpty }.count
        configsUnknown = plan.entries.filter { $0.configsUnknown != nil }.count
        outcome =
            drifted > 0
            ? .drift
            : created + changed == 0
                ? .inSync
                : dryRun ? .pending : .changed
        var line =
            dryRun
            ? "topics (dry run): \(catalogued) in the catalogue, \(created) to create, \(changed) to change, \(drifted) drifted"
            : "topics: \(catalogued) in the catalogue, \(created) created, \(changed) changed, \(drifted) drifted"
        if configsUnknown > 0 { line += ", configs of \(configsUnknown) unknown (the broker does not report them)" }
        switch outcome {
        case .inSync: line += " — nothing to do"
        case .changed: break
        case .pending: line += " — nothing changed (dry run)"
        case .drift: line += " — drift remains that apply cannot repair (see above)" + (dryRun ? "; nothing changed (dry run)" : "")
        }
        summary = line
    }

    /// The human-readable report: one line per topic that is not in sync, then the summary.
    public var text: String {
        var lines: [String] = []
        if let cap = replicationFactorCap, let capped = topics.first(where: { $0.replicationFactor < $0.catalogueReplicationFactor }) {
            lines.append(
                "replication capped at \(cap) (--replication-factor-cap / TOPICS_MAX_REPLICATION_FACTOR): the catalogue asks "
                    + "replication factor \(capped.catalogueReplicationFactor); min.insync.replicas is lowered to at most \(cap). "
                    + "For development clusters only.")
        }
        let width = max(topics.map(\.name.count).max() ?? 0, 10) + 2
        for topic in topics where topic.state != "in_sync" {
            let name = topic.name.padding(toLength: width, withPad: " ", startingAt: 0)
            switch topic.state {
            case "created", "would_create":
                let configs = topic.configValues.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                lines.append(
                    name + (topic.state == "created" ? "created" : "would create") + ": \(topic.partitions) partitions, "
                        + "replication factor \(topic.replicationFactor)" + (configs.isEmpty ? "" : ", " + configs.joined(separator: ", ")))
            case "existed":
                lines.append(name + "already existed (created meanwhile by someone else); run again to compare it")
            default:
                if !topic.configChanges.isEmpty {
                    let verb = dryRun ? "would set" : "set"
                    let list = topic.configChanges.map { "\($0.name) \($0.from ?? "(not set)") → \($0.to)" }
                    lines.append(name + "\(verb) " + list.joined(separator: ", "))
                }
                for drift in topic.drift { lines.append(name + "drift: " + drift.message) }
            }
            if topic.configs != "known" { lines.append(name + "configs " + topic.configs) }
        }
        for topic in topics where topic.state == "in_sync" && topic.configs != "known" {
            let name = topic.name.padding(toLength: width, withPad: " ", startingAt: 0)
            lines.append(name + "partitions and replication in sync; configs " + topic.configs)
        }
        lines.append(summary)
        return lines.joined(separator: "\n")
    }

    /// The report as one JSON object (sorted keys, so the output is stable).
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
