import AsyncHTTPClient
import ConsumptionResponder
import EntitlementStore
import GrantService
import KafkaClient
import PostgresNIO
import StageRuntime

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
    GrantMetrics.registerAtZero()
    let consumption = try ConsumptionConfiguration.read(env)
    logger.info("database", metadata: ["postgres": "\(grant.store)", "products.file": "\(grant.productsFile ?? "(none)")"])
    try await DatabasePreparation.prepare(grant, logger: logger)
    let client = PostgresClient(configuration: grant.store.clientConfiguration(), backgroundLogger: logger)
    let store = EntitlementStore(client: client, logger: logger)
    let outboxProducer = try KafkaProducer(configuration: config.producer, logger: logger)
    let publisher = OutboxPublisher(
        store: store, producer: outboxProducer, topic: config.outputTopic,
        pollInterval: grant.outboxPollInterval, batchSize: grant.outboxBatchSize, logger: logger)
    let stage = GrantStage(store: store, policy: grant.policy, concurrentTransactions: grant.concurrentTransactions, logger: logger) {
        publisher.notify()
    }
    guard let consumption else { return (stage, [client, outboxProducer, publisher]) }
    logger.info("answering consumption requests", metadata: ["apps": "\(consumption.policy.apps.sorted().joined(separator: ","))"])
    let responder = ConsumptionResponder(
        store: store, client: try consumption.makeClient(httpClient: HTTPClient.shared, logger: logger), policy: consumption.policy,
        pollInterval: consumption.pollInterval, logger: logger)
    return (stage, [client, outboxProducer, publisher, responder])
}
