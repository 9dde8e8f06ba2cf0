import EnrichService
import PipelineRecords
import StageRuntime

ProcessBootstrap.runTasksOnEventLoops()

/// The enrich stage: verified topic → enriched topic (or the enrich DLQ with Apple's error code).
await StageMain.run(
    name: "enrich",
    summary:
        "looks up each purchase's transaction history and subscription status with the App Store Server API (every JWS verified), sorts the history, marks the transaction in force, resolves appAccountToken, and publishes the enriched record under the same key",
    defaults: .init(stage: PipelineStages.enrich, httpPort: 8082, batchSize: 50),
    extraVariables: EnrichConfiguration.variables
) { config, env, logger in
    let configuration = try EnrichConfiguration(environment: env)
    let (stage, httpService) = try EnrichServiceBootstrap.make(configuration: configuration, outputTopic: config.outputTopic, logger: logger)
    return (stage, [httpService])
}
