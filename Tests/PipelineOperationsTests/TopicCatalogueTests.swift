import Foundation
import PipelineOperations
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

@Suite("Topic catalogue: reading and checking schemas/topics.json")
struct TopicCatalogueTests {
    static func parse(_ json: String) throws(TopicCatalogueError) -> TopicCatalogue {
        try TopicCatalogue.parse(Data(json.utf8), source: "test.json")
    }

    @Test("the repository's catalogue parses, mirrors Topics.swift, and keeps the production promises")
    func repositoryCatalogue() throws {
        let path = TestServices.repositoryRoot.appendingPathComponent("schemas/topics.json").path
        let catalogue = try TopicCatalogue.load(path: path)
        #expect(catalogue.topics.map(\.name) == Topics.catalogue.map(\.name))
        #expect(catalogue.topics.map(\.partitions) == Topics.catalogue.map(\.partitions))
        for topic in catalogue.topics {
            #expect(topic.replicationFactor == 3, "\(topic.name)")
            #expect(topic.minInsyncReplicas == 2, "\(topic.name)")
            #expect(topic.configs["cleanup.policy"] == "delete", "\(topic.name)")
        }
        let byName = Dictionary(uniqueKeysWithValues: catalogue.topics.map { ($0.name, $0) })
        #expect(Int(byName[Topics.raw]?.configs["retention.ms"] ?? "") ?? 0 >= 31 * 24 * 3_600_000)
        for dlq in [Topics.verifyDeadLetters, Topics.enrichDeadLetters, Topics.grantDeadLetters] {
            // Kept long enough to be dealt with, but bounded: a flood of junk cannot fill the disks.
            #expect((byName[dlq]?.configs["retention.ms"]).flatMap(Int64.init) ?? 0 >= 60 * 86_400_000)
            #expect((byName[dlq]?.configs["retention.bytes"]).flatMap(Int64.init) ?? 0 > 0)
        }
    }

    @Test("a file that is not JSON is refused with the file's name")
    func badJSON() {
        #expect { try Self.parse("{\"topics\": [") } throws: { error in
            guard let error = error as? TopicCatalogueError, case .invalidJSON(let source, _) = error else { return false }
            return source == "test.json" && error.code == "topics.invalid_catalogue"
        }
    }

    @Test("a topic without partitions is refused, naming the topic and the field")
    func missingPartitions() {
        let json = #"{"topics": [{"name": "a.v1", "partitions": 1, "replicationFactor": 1}, {"name": "b.v1", "replicationFactor": 3}]}"#
        #expect(throws: TopicCatalogueError.invalidValue(topic: "b.v1", field: "partitions", problem: "is missing")) {
            try Self.parse(json)
        }
    }

    @Test("min.insync.replicas above the replication factor is refused, naming the topic")
    func minInsyncAboveReplication() {
        let json = #"{"topics": [{"name": "c.v1", "partitions": 2, "replicationFactor": 2, "configs": {"min.insync.replicas": "3"}}]}"#
        #expect(throws: TopicCatalogueError.minInsyncAboveReplication(topic: "c.v1", minInsyncReplicas: 3, replicationFactor: 2)) {
            try Self.parse(json)
        }
    }

    @Test("wrong types, zero partitions, illegal names and duplicates are refused with the topic's name")
    func otherProblems() {
        let numberConfig = #"{"topics": [{"name": "d.v1", "partitions": 2, "replicationFactor": 1, "configs": {"retention.ms": 5}}]}"#
        #expect { try Self.parse(numberConfig) } throws: { ($0 as? TopicCatalogueError)?.topic == "d.v1" }
        let fractional = #"{"topics": [{"name": "e.v1", "partitions": 2.5, "replicationFactor": 1}]}"#
        #expect { try Self.parse(fractional) } throws: { ($0 as? TopicCatalogueError)?.topic == "e.v1" }
        let zero = #"{"topics": [{"name": "f.v1", "partitions": 0, "replicationFactor": 1}]}"#
        #expect { try Self.parse(zero) } throws: { ($0 as? TopicCatalogueError)?.topic == "f.v1" }
        let illegal = #"{"topics": [{"name": "g v1", "partitions": 1, "replicationFactor": 1}]}"#
        #expect { try Self.parse(illegal) } throws: { ($0 as? TopicCatalogueError)?.code == "topics.invalid_topic" }
        let twice = #"{"topics": [{"name": "h", "partitions": 1, "replicationFactor": 1}, {"name": "h", "partitions": 1, "replicationFactor": 1}]}"#
        #expect(throws: TopicCatalogueError.duplicateTopic("h")) { try Self.parse(twice) }
    }

    @Test("a replication cap lowers the replication factor and min.insync.replicas, and never raises them")
    func cap() {
        let topic = CatalogueTopic(name: "t", partitions: 8, replicationFactor: 3, configs: ["min.insync.replicas": "2", "retention.ms": "-1"])
        let one = topic.capped(at: 1)
        #expect(one.replicationFactor == 1)
        #expect(one.configs == ["min.insync.replicas": "1", "retention.ms": "-1"])
        let two = topic.capped(at: 2)
        #expect(two.replicationFactor == 2 && two.minInsyncReplicas == 2)
        #expect(topic.capped(at: 5) == topic)
        #expect(topic.capped(at: nil) == topic)
    }
}
