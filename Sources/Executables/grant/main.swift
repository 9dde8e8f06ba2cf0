import ConsumptionResponder
import GrantService
import PipelineRecords
import StageRuntime

ProcessBootstrap.runTasksOnEventLoops()

/// The grant stage: enriched topic → entitlements in Postgres; changes published from the outbox;
/// Apple's consumption requests answered for the apps that opted in.
await StageMain.run(
    name: "grant",
    summary:
        "applies enriched App Store events to the entitlements database idempotently and order-safely, one transaction per batch, publishes the committed entitlement changes from the outbox keyed by customer, and answers Apple's consumption requests for the apps that opted in",
    defaults: .init(stage: PipelineStages.grant, outputTopic: Topics.entitlementChanges, httpPort: 8083, batchSize: 200),
    extraVariables: GrantConfiguration.variables + ConsumptionConfiguration.variables
) { config, env, logger in
    let grant = try GrantConfiguration(environment: env)
    let consumption = try ConsumptionConfiguration.read(env)
    let parts = try await GrantBootstrap.make(grant, config: config, logger: logger)
    guard let consumption else { return (parts.stage, parts.services) }
    return (parts.stage, parts.services + [try ConsumptionResponder.make(configuration: consumption, store: parts.store, logger: logger)])
}
