import KafkaClient
import StageRuntime

ProcessBootstrap.runTasksOnEventLoops()

/// Copies every record of its input topic to its output topic through the stage runtime, keeping
/// key, body and headers. Proves a cluster end to end, and serves the crash and throughput tests.
struct RelayStage: PipelineStage {
    let name = "relay"
    let outputTopic: String

    func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
        [KafkaOutgoingMessage(topic: outputTopic, key: message.key, value: message.value, headers: message.headers)]
    }
}

await StageMain.run(
    name: "stage-relay",
    summary: "copies INPUT_TOPIC to OUTPUT_TOPIC through the stage runtime (a diagnostic stage)",
    defaults: .init(groupID: "appstore.relay", httpPort: 8089)
) { config, _, _ in
    (RelayStage(outputTopic: config.outputTopic), [])
}
