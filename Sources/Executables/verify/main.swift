import PipelineRecords
import StageRuntime
import VerifyService

ProcessBootstrap.runTasksOnEventLoops()

/// The verify stage: raw topic → verified topic (or the verify DLQ with the verifier's error code).
await StageMain.run(
    name: "verify",
    summary:
        "verifies every JWS of each raw record (signature, X.509 chain to Apple Root CA - G3, app and environment), publishes the decoded notification keyed by originalTransactionId, and dead-letters what fails",
    defaults: .init(stage: PipelineStages.verify, httpPort: 8081),
    extraVariables: VerifyConfiguration.variables
) { config, env, logger in
    let verifyConfiguration = try VerifyConfiguration(environment: env)
    return (try VerifyStage(configuration: verifyConfiguration, outputTopic: config.outputTopic, logger: logger), [])
}
