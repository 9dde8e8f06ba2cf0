import ConsumptionResponder
import GrantService
import PipelineRecords
import StageRuntime
import TokenStamping

ProcessBootstrap.runTasksOnEventLoops()

/// The grant stage: enriched topic → entitlements in Postgres; changes published from the outbox;
/// Apple's consumption requests answered, and Apple's token stamped on upload-owned purchases, for
/// the apps that opted in.
await StageMain.run(
    name: "grant",
    summary:
        "applies enriched App Store events to the entitlements database idempotently and order-safely, one transaction per batch, publishes the committed entitlement changes from the outbox keyed by customer, and answers Apple's consumption requests for the apps that opted in",
    defaults: .init(stage: PipelineStages.grant, outputTopic: Topics.entitlementChanges, httpPort: 8083, batchSize: 200),
    extraVariables: GrantConfiguration.variables + ConsumptionConfiguration.variables + TokenStampConfiguration.variables
) { config, env, logger in
    let grant = try GrantConfiguration(environment: env)
    let consumption = try ConsumptionConfiguration.read(env)
    let stamping = try TokenStampConfiguration.read(env)
    let parts = try await GrantBootstrap.make(grant, config: config, logger: logger)
    var services = parts.services
    if let consumption { services.append(try ConsumptionResponder.make(configuration: consumption, store: parts.store, logger: logger)) }
    if let stamping { services.append(try TokenStamper.make(configuration: stamping, store: parts.store, logger: logger)) }
    return (parts.stage, services)
}
