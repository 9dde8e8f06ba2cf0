import Foundation
import KafkaClient
import Logging
import ServiceLifecycle
import StageRuntime

/// Runs a stage in-process in its own `ServiceGroup`, as an executable would.
public struct StageHarness {
    public let runner: StageRunner
    public let producer: KafkaProducer
    let group: ServiceGroup
    let task: Task<Void, any Error>

    public init(
        stage: any PipelineStage, input: String, deadLetters: String, groupID: String, batchSize: Int = 1,
        retry: RetryPolicy = RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200)), maxBuffered: Int = 500,
        maxParked: Int = 100, drainTimeout: Duration = .seconds(10)
    ) throws {
        let logger = TestServices.logger
        producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: logger)
        runner = try StageRunner(
            stage: stage, consumerConfiguration: TestServices.consumerConfiguration(group: groupID, topics: [input]),
            producer: producer,
            configuration: StageRunnerConfiguration(
                deadLetterTopic: deadLetters, retry: retry, maxBatchSize: batchSize, maxBufferedPerPartition: maxBuffered,
                maxParkedPerPartition: maxParked, drainTimeout: drainTimeout),
            logger: logger)
        group = ServiceGroup(services: [producer, runner.consumer, runner], logger: logger)
        let group = self.group
        task = Task { try await group.run() }
    }

    /// Graceful shutdown, as on SIGTERM; waits until every service has stopped.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}

/// Produces numbered records `0..<count` spread over partitions by key.
public func produceNumbered(_ topic: String, count: Int, keys: Int, body: (Int) -> String = { "\($0)" }) async throws {
    let producer = try TestServices.makeProducer()
    let messages = (0..<count).map { i in
        KafkaOutgoingMessage(topic: topic, key: "k\(i % keys)", value: Array(body(i).utf8), headers: [KafkaHeader(key: "n", string: "\(i)")])
    }
    _ = try await producer.sendAll(messages)
    await producer.close()
}

extension KafkaMessage {
    public var text: String { String(decoding: value, as: UTF8.self) }
}
