import AppStore
import EnvironmentSettings
import Foundation
import GrantWorkload
import KafkaClient
import Logging
import PipelineMessages
import PipelineRecords
import StageRuntime

/// `grant-bench produce TOPIC COUNT`: writes COUNT generated enriched events (whole customer
/// lifecycles, in signing order) to TOPIC as enrich would — keyed `<environment>:<originalTransactionId>`,
/// with the `ingested-at` and `schema` headers — so `deploy/local/bench e2e` can time the real grant
/// process replaying them. Broker from KAFKA_BOOTSTRAP_SERVERS.
enum ReplayTopicWriter {
    static func run(topic: String, count: Int, logger: Logger) async throws {
        let generator = LifecycleGenerator(seed: 2027)
        var records: [EnrichedRecord] = []
        var customers = max(1, count / 10)
        while records.count < count {
            records = generator.stream(customers: customers)
            customers *= 2
        }
        records = Array(records.prefix(count))
        let kafka = try EnvironmentReader().kafkaClient(defaultClientID: "grant-bench")
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(client: kafka, linger: .milliseconds(5)), logger: logger)
        let now = Date()
        var sent = 0
        for chunk in stride(from: 0, to: records.count, by: 5000) {
            let messages = try records[chunk..<min(chunk + 5000, records.count)].map {
                try EnrichedMessage.make($0, topic: topic, ingestedAt: now)
            }
            sent += try await producer.sendAll(messages).count
        }
        await producer.close()
        print("grant-bench: wrote \(sent) enriched events to \(topic)")
    }
}
