import AppStore
import EntitlementStore
import EnvironmentSettings
import ErrorClassification
import Foundation
import GrantDecision
import KafkaClient
import LogKeys
import Logging
import PipelineMessages
import PipelineRecords
import StageRuntime

/// The grant stage: enriched records → Postgres, a whole batch of one partition in one database
/// transaction, shared with the batches of other partitions that arrive while the store is busy
/// (``TransactionMerger``). It produces no records itself: changes leave through the outbox, published by
/// ``OutboxPublisher`` after the commit. The runtime stores a record's offset only after `process`
/// returned, i.e. after the commit, so a crash before it means redelivery, which the store ignores.
public struct GrantStage: PipelineStage {
    public let name = "grant"
    let merger: TransactionMerger
    let policy: GrantPolicy
    let committed: @Sendable () -> Void
    /// When set, a record no listed key signed is dead-lettered (`record.unauthenticated`).
    let recordKeys: RecordKeys?
    /// Checks that Postgres keeps what grant committed; a service to run beside the stage.
    public let restoreWatch: RestoreWatch
    let logger: Logger

    /// - Parameters:
    ///   - concurrentTransactions: how many transactions apply batches at once.
    ///   - gatherWindow: how long a transaction started by an arriving batch waits for company.
    ///   - committed: called after every commit that may have written outbox rows (wakes the publisher).
    public init(
        store: EntitlementStore, policy: GrantPolicy,
        concurrentTransactions: Int = GrantConfiguration.concurrentTransactionsSetting.defaultValue,
        gatherWindow: Duration = GrantConfiguration.gatherWindowSetting.defaultValue, recordKeys: RecordKeys? = nil,
        restoreCheckInterval: Duration = GrantConfiguration.restoreCheck.defaultValue, logger: Logger,
        committed: @escaping @Sendable () -> Void = {}
    ) {
        restoreWatch = RestoreWatch(store: store, interval: restoreCheckInterval, logger: logger)
        self.recordKeys = recordKeys
        self.merger = TransactionMerger(store: store, maximumConcurrentTransactions: concurrentTransactions, gatherWindow: gatherWindow)
        self.policy = policy
        self.logger = logger
        self.committed = committed
    }

    public func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
        guard let result = try await process(batch: [message]).first else { return [] }
        return try result.get()
    }

    public func process(batch: [KafkaMessage]) async throws -> [Result<[KafkaOutgoingMessage], any Error>] {
        var results = [Result<[KafkaOutgoingMessage], any Error>?](repeating: nil, count: batch.count)
        var events: [GrantEvent] = []
        var positions: [Int] = []
        for (i, message) in batch.enumerated() {
            if let refusal = recordKeys?.refusal(message.value, headers: message.headers) {
                results[i] = .failure(StageError.permanent(.recordUnauthenticated, refusal))
                continue
            }
            do {
                let record = try EnrichedRecord.decode(message.value)
                var event = try GrantEvent(record)
                event.ingestedAt = message.ingestedAt
                event.traceContext = message.headers.string(PipelineHeader.traceparent)
                events.append(event)
                positions.append(i)
            } catch let rejection as GrantRejection {
                results[i] = .failure(StageError.permanent(StageError.Code(rawValue: rejection.code.rawValue), rejection.message))
            } catch {
                results[i] = .failure(StageError.permanent(.malformedRecord, "the enriched record could not be decoded: \(error)"))
            }
        }
        await restoreWatch.checkIfRecovering()
        let decisions: [Result<GrantDecision, GrantRejection>]
        do {
            decisions = try await merger.apply(events, policy: policy)
        } catch {
            restoreWatch.failedToApply()
            throw error
        }
        var changed = false
        var lastCommitted: [KafkaTopicPartition: CommittedEvent] = [:]
        for (position, decision) in zip(positions, decisions) {
            switch decision {
            case .success(let d):
                changed = changed || d.publishes
                log(d, batch[position])
                results[position] = .success([])
                lastCommitted[batch[position].topicPartition] = CommittedEvent(environment: d.event.environment, eventKey: d.event.eventKey)
            case .failure(let rejection):
                results[position] = .failure(StageError.permanent(StageError.Code(rawValue: rejection.code.rawValue), rejection.message))
            }
        }
        for (partition, event) in lastCommitted { restoreWatch.samples.committed(event, partition: partition) }
        if changed { committed() }
        return results.map { $0 ?? .success([]) }
    }

    private func log(_ d: GrantDecision, _ message: KafkaMessage) {
        guard logger.logLevel <= .debug || !d.changes.isEmpty || !d.refusedClaims.isEmpty else { return }
        var metadata: Logger.Metadata = [
            LogKey.partition: "\(message.partition)", LogKey.offset: "\(message.offset)",
            LogKey.grantEvent: "\(d.event.eventKey)", LogKey.grantOutcome: "\(d.outcome.rawValue)", LogKey.grantChanges: "\(d.changes.count)",
        ]
        if let key = d.event.purchaseKey { metadata[LogKey.originalTransactionId] = "\(key.purchaseId)" }
        if let uuid = d.event.notificationUUID { metadata[LogKey.notificationUUID] = "\(uuid)" }
        if let note = d.note { metadata[LogKey.grantNote] = "\(note)" }
        if d.refusedClaims.isEmpty {
            logger.debug("event applied", metadata: metadata)
        } else {
            logger.notice("ownership claim refused", metadata: metadata)
        }
    }
}
