import Foundation

/// One topic of `schemas/topics.json` as `appstorectl topics apply` needs it: its layout and its
/// broker-side configs. (The catalogue's other keys — key, producer, schema, … — document the topic.)
public struct CatalogueTopic: Sendable, Hashable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    /// Kafka topic configs as Kafka spells them (`retention.ms`, `min.insync.replicas`, …).
    public var configs: [String: String]

    public init(name: String, partitions: Int, replicationFactor: Int, configs: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.configs = configs
    }

    /// `min.insync.replicas`, when the catalogue sets it.
    public var minInsyncReplicas: Int? { configs[Self.minInsyncReplicasKey].flatMap { Int($0) } }

    static let minInsyncReplicasKey = "min.insync.replicas"

    /// The topic on a cluster whose replication is capped at `cap`: the replication factor is at
    /// most `cap`, and `min.insync.replicas` at most the replication factor (else no write could
    /// ever be acknowledged with `acks=all`).
    public func capped(at cap: Int?) -> CatalogueTopic {
        guard let cap, cap < replicationFactor else { return self }
        var topic = self
        topic.replicationFactor = cap
        if let minInsync = minInsyncReplicas, minInsync > cap { topic.configs[Self.minInsyncReplicasKey] = String(cap) }
        return topic
    }
}

/// The topic catalogue (`schemas/topics.json`), read and checked.
public struct TopicCatalogue: Sendable, Hashable {
    public var topics: [CatalogueTopic]
    /// Where it was read from, for messages.
    public var source: String

    public init(topics: [CatalogueTopic], source: String) {
        self.topics = topics
        self.source = source
    }

    /// Where the container images put the catalogue.
    public static let installedPath = "/usr/share/appstore-entitlements/topics.json"

    /// Reads and checks the catalogue file at `path`.
    public static func load(path: String) throws(TopicCatalogueError) -> TopicCatalogue {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path: path) }
        return try parse(data, source: path)
    }

    /// The catalogue file: `explicit` when given, else the first `schemas/topics.json` found from the
    /// working directory or upwards from the executable (a checkout's `.build/…/appstorectl`), else
    /// ``installedPath``. The same search as the migrations directory's.
    public static func locate(explicit: String?) throws(TopicCatalogueError) -> String {
        if let explicit { return explicit }
        var candidates = [FileManager.default.currentDirectoryPath + "/schemas/topics.json"]
        var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(dir.path + "/schemas/topics.json")
            dir = dir.deletingLastPathComponent()
        }
        candidates.append(installedPath)
        if let found = candidates.first(where: { FileManager.default.isReadableFile(atPath: $0) }) { return found }
        throw .notFound(searched: candidates)
    }

    /// Parses and checks a catalogue: every topic has a legal name, at least one partition, a
    /// replication factor, string-valued configs, and `min.insync.replicas` no larger than its
    /// replication factor; no name twice.
    public static func parse(_ data: Data, source: String) throws(TopicCatalogueError) -> TopicCatalogue {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw located(context, in: data, source: source, problem: "has the wrong type")
        } catch let DecodingError.keyNotFound(key, context) {
            throw located(context, in: data, source: source, problem: "is missing", field: key.stringValue)
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.count >= 2 {
            throw located(context, in: data, source: source, problem: "has the wrong type (\(context.debugDescription))")
        } catch let DecodingError.dataCorrupted(context) {
            // Foundation's decoder reports a fraction where an Int belongs as invalid JSON, without a path.
            if let (topic, field) = fractionalCount(in: data) {
                throw .invalidValue(topic: topic, field: field, problem: "must be a whole number")
            }
            throw .invalidJSON(source: source, detail: (context.underlyingError.map { "\($0)" } ?? context.debugDescription))
        } catch {
            throw .invalidJSON(source: source, detail: "\(error)")
        }
        guard !document.topics.isEmpty else { throw .invalidJSON(source: source, detail: "`topics` is empty") }
        var seen: Set<String> = []
        var topics: [CatalogueTopic] = []
        for raw in document.topics {
            let topic = CatalogueTopic(
                name: raw.name, partitions: raw.partitions, replicationFactor: raw.replicationFactor, configs: raw.configs ?? [:])
            try validate(topic)
            guard seen.insert(topic.name).inserted else { throw .duplicateTopic(topic.name) }
            topics.append(topic)
        }
        return TopicCatalogue(topics: topics, source: source)
    }

    private static func validate(_ topic: CatalogueTopic) throws(TopicCatalogueError) {
        let legal = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard !topic.name.isEmpty, topic.name.count <= 249, topic.name.allSatisfy(legal.contains), topic.name != ".", topic.name != ".." else {
            throw .invalidValue(topic: topic.name, field: "name", problem: "is not a legal Kafka topic name ([a-zA-Z0-9._-], at most 249)")
        }
        guard topic.partitions >= 1 else {
            throw .invalidValue(topic: topic.name, field: "partitions", problem: "must be at least 1 (got \(topic.partitions))")
        }
        guard topic.replicationFactor >= 1 else {
            throw .invalidValue(topic: topic.name, field: "replicationFactor", problem: "must be at least 1 (got \(topic.replicationFactor))")
        }
        if let text = topic.configs[CatalogueTopic.minInsyncReplicasKey] {
            guard let minInsync = Int(text), minInsync >= 1 else {
                throw .invalidValue(
                    topic: topic.name, field: "configs.min.insync.replicas", problem: "must be a whole number of at least 1 (got \(text))")
            }
            guard minInsync <= topic.replicationFactor else {
                throw .minInsyncAboveReplication(topic: topic.name, minInsyncReplicas: minInsync, replicationFactor: topic.replicationFactor)
            }
        }
    }

    /// A decoding failure inside `topics[i]`, named by the topic's name when it has one.
    private static func located(
        _ context: DecodingError.Context, in data: Data, source: String, problem: String, field: String? = nil
    ) -> TopicCatalogueError {
        let path = context.codingPath
        guard path.count >= 2, path[0].stringValue == "topics", let index = path[1].intValue else {
            return .invalidJSON(
                source: source, detail: "`\((path.map(\.stringValue) + [field].compactMap { $0 }).joined(separator: "."))` \(problem)")
        }
        let names = ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any])?["topics"] as? [[String: Any]]
        let name = names.flatMap { index < $0.count ? $0[index]["name"] as? String : nil } ?? "topics[\(index)]"
        let fieldPath = (path.dropFirst(2).map(\.stringValue) + [field].compactMap { $0 }).joined(separator: ".")
        let what = fieldPath.hasPrefix("configs.") ? "\(fieldPath) (config values are strings, as Kafka takes them)" : fieldPath
        return .invalidValue(topic: name, field: what, problem: problem)
    }

    /// The first topic whose partitions or replication factor is a number with a fraction.
    private static func fractionalCount(in data: Data) -> (topic: String, field: String)? {
        guard let document = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            let topics = document["topics"] as? [[String: Any]]
        else { return nil }
        for (index, topic) in topics.enumerated() {
            for field in ["partitions", "replicationFactor"] {
                if let number = topic[field] as? Double, number.rounded() != number {
                    return (topic["name"] as? String ?? "topics[\(index)]", field)
                }
            }
        }
        return nil
    }

    private struct Document: Decodable {
        var topics: [RawTopic]
    }

    private struct RawTopic: Decodable {
        var name: String
        var partitions: Int
        var replicationFactor: Int
        var configs: [String: String]?
    }
}

/// Why the catalogue cannot be used. Each names the file or the topic, with a stable code.
public enum TopicCatalogueError: Error, Hashable, Sendable, CustomStringConvertible {
    case notFound(searched: [String])
    case unreadable(path: String)
    case invalidJSON(source: String, detail: String)
    case invalidValue(topic: String, field: String, problem: String)
    case minInsyncAboveReplication(topic: String, minInsyncReplicas: Int, replicationFactor: Int)
    case duplicateTopic(String)

    public var code: String {
        switch self {
        case .notFound: "topics.catalogue_not_found"
        case .unreadable: "topics.catalogue_unreadable"
        case .invalidJSON: "topics.invalid_catalogue"
        case .invalidValue: "topics.invalid_topic"
        case .minInsyncAboveReplication: "topics.min_insync_above_replication"
        case .duplicateTopic: "topics.duplicate_topic"
        }
    }

    /// The topic the error is about, when it is about one.
    public var topic: String? {
        switch self {
        case .invalidValue(let topic, _, _), .minInsyncAboveReplication(let topic, _, _), .duplicateTopic(let topic): topic
        default: nil
        }
    }

    public var message: String {
        switch self {
        case .notFound(let searched):
            "no topic catalogue found (looked for \(searched.joined(separator: ", "))); pass --catalogue FILE"
        case .unreadable(let path): "cannot read the topic catalogue \(path)"
        case .invalidJSON(let source, let detail): "\(source) is not a valid topic catalogue: \(detail)"
        case .invalidValue(let topic, let field, let problem): "topic \(topic): \(field) \(problem)"
        case .minInsyncAboveReplication(let topic, let minInsync, let replicationFactor):
            "topic \(topic): min.insync.replicas \(minInsync) is above its replication factor \(replicationFactor), so no acks=all write could ever succeed"
        case .duplicateTopic(let topic): "topic \(topic) is in the catalogue twice"
        }
    }

    public var description: String { "\(code): \(message)" }
}
