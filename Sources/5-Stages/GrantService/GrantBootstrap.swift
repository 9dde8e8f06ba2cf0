import EntitlementStore
import KafkaClient
import LogKeys
import Logging
import PostgresNIO
import ServiceLifecycle
import StageRuntime

/// What the grant process builds from its configuration: the database prepared, the store, the
/// outbox publisher on its own producer and the stage that wakes it, so the executable stays as
/// thin as verify's and enrich's.
public enum GrantBootstrap {
    /// The grant stage, the store (the consumption responder reads it too), and the services it
    /// needs running before it, in dependency order: the database client, the outbox producer, the
    /// publisher, the ``RestoreWatch``.
    public struct Parts: Sendable {
        public let stage: GrantStage
        public let store: EntitlementStore
        public let services: [any Service]
    }

    /// Migrates the database when `grant` says so and builds the parts; the outbox is published to
    /// `config.outputTopic`. Read every configuration before calling it, so that a bad variable
    /// stops the process before the database is touched.
    public static func make(_ grant: GrantConfiguration, config: StageConfiguration, logger: Logger) async throws -> Parts {
        GrantMetrics.registerAtZero()
        logger.info("database", metadata: [LogKey.postgresTarget: "\(grant.store)", LogKey.grantProductsFile: "\(grant.productsFile ?? "(none)")"])
        try await DatabasePreparation.prepare(grant, logger: logger)
        let client = PostgresClient(configuration: grant.store.clientConfiguration(), backgroundLogger: logger)
        let store = EntitlementStore(client: client, logger: logger)
        let outboxProducer = try KafkaProducer(configuration: config.producer, logger: logger)
        let publisher = OutboxPublisher(
            store: store, producer: outboxProducer, topic: config.outputTopic,
            pollInterval: grant.outboxPollInterval, gatherWindow: grant.outboxGatherWindow, batchSize: grant.outboxBatchSize,
            logger: logger)
        let stage = GrantStage(
            store: store, policy: grant.policy, concurrentTransactions: grant.concurrentTransactions, gatherWindow: grant.gatherWindow,
            recordKeys: grant.recordKeys, restoreCheckInterval: grant.restoreCheckInterval, logger: logger
        ) {
            publisher.notify()
        }
        if grant.recordKeys == nil {
            logger.warning("RECORD_MAC_KEYS_FILE is not set: enriched records are applied without checking that enrich wrote them")
        }
        return Parts(stage: stage, store: store, services: [client, outboxProducer, publisher, stage.restoreWatch])
    }
}
