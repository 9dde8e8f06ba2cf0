import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import Logging
import PipelineRecords
import StageRuntime
import Synchronization

/// The enrich stage: a verified record in, an enriched record out (same key), or a classified failure.
///
/// Subscriptions, non-consumables and non-renewing purchases get the purchase's transaction history
/// (sorted by `purchaseDate`, the newest in force) and, for auto-renewables, its subscription status;
/// consumables are enriched from their own transaction; records without a purchase pass with
/// lookup `none`. Within a batch, records of the same purchase share one lookup (``coalesce``) and
/// different purchases are looked up concurrently. A transient API failure stops the batch at that
/// record, so the runtime retries it and everything after it in place, in order; a permanent one
/// dead-letters the records of that purchase with Apple's code (`apple_api_<errorCode>`).
public struct EnrichStage: PipelineStage {
    public let name = "enrich"
    let lookup: PurchaseLookup
    let outputTopic: String
    /// Whether records of one batch for the same purchase share one lookup.
    public let coalesce: Bool
    let concurrency: Int
    let logger: Logger
    let clock: @Sendable () -> Date
    private let lookups = LookupCounter()
    /// Lookups that completed for records behind a transient failure, kept for the retry of those
    /// records so a partial outage or Apple's rate limiting does not repeat work already done.
    private let carried = CarriedLookups()

    public init(
        lookup: PurchaseLookup, outputTopic: String = Topics.enriched, coalesce: Bool = true, concurrency: Int = 8, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.lookup = lookup
        self.outputTopic = outputTopic
        self.coalesce = coalesce
        self.concurrency = max(1, concurrency)
        self.logger = logger
        self.clock = clock
    }

    /// Purchase lookups performed so far (each is one history walk plus, for subscriptions, one status call).
    public var lookupsPerformed: Int { lookups.value.load(ordering: .relaxed) }

    public func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
        try await process(batch: [message])[0].get()
    }

    public func process(batch: [KafkaMessage]) async throws -> [Result<[KafkaOutgoingMessage], any Error>] {
        // Decode and plan every record.
        var planned: [Result<(VerifiedRecord, EnrichmentBuilder.Plan), any Error>] = []
        for message in batch {
            do {
                let record = try VerifiedRecord.decode(message.value)
                planned.append(.success((record, EnrichmentBuilder.plan(for: record))))
            } catch {
                planned.append(.failure(StageError.permanent("malformed_record", "the verified record does not decode: \(String(describing: error).prefix(300))")))
            }
        }
        // One lookup per purchase (or per record without coalescing), concurrently.
        var jobs: [String: PurchaseKey] = [:]
        var jobOfRecord: [Int: String] = [:]
        var answers: [String: Result<PurchaseLookupResult, any Error>] = [:]
        for (index, item) in planned.enumerated() {
            guard case .success((_, .history(let key))) = item else { continue }
            let id = coalesce ? key.coalescingKey : "\(index)"
            jobOfRecord[index] = id
            if answers[id] == nil, let kept = carried.take(key.coalescingKey, now: clock()) {
                answers[id] = .success(kept)
            }
            if answers[id] == nil { jobs[id] = jobs[id] ?? key }
        }
        answers.merge(await run(jobs)) { kept, _ in kept }
        // Assemble in order; stop at the first transient failure (it and what follows are retried).
        var results: [Result<[KafkaOutgoingMessage], any Error>] = []
        for (index, item) in planned.enumerated() {
            let outcome: Result<[KafkaOutgoingMessage], any Error>
            switch item {
            case .failure(let error):
                outcome = .failure(error)
            case .success((let record, let plan)):
                outcome = Result { () throws -> [KafkaOutgoingMessage] in
                    let enrichment: Enrichment
                    switch plan {
                    case .none: enrichment = EnrichmentBuilder.noneEnrichment(record: record, now: now())
                    case .transactionOnly: enrichment = EnrichmentBuilder.transactionOnlyEnrichment(record: record, now: now())
                    case .history:
                        let answer = try answers[jobOfRecord[index]!]!.get()
                        enrichment = EnrichmentBuilder.historyEnrichment(record: record, lookup: answer)
                    }
                    return [try output(for: batch[index], record: record, enrichment: enrichment)]
                }
            }
            results.append(outcome)
            if case .failure(let error) = outcome, FailureClassification(error).isTransient {
                // Keep what was fetched for the records that will be retried.
                for later in (index + 1)..<planned.count {
                    guard let id = jobOfRecord[later], case .success(let answer)? = answers[id],
                        case .success((_, .history(let key))) = planned[later]
                    else { continue }
                    carried.keep(key.coalescingKey, answer)
                }
                break
            }
        }
        return results
    }

    /// Runs the lookups, ``concurrency`` at a time (in waves). Plain tasks awaited in order rather
    /// than a task group: the task-group form crashed in release builds of this toolchain.
    func run(_ jobs: [String: PurchaseKey]) async -> [String: Result<PurchaseLookupResult, any Error>] {
        let work = Array(jobs)
        var answers: [String: Result<PurchaseLookupResult, any Error>] = [:]
        let lookup = self.lookup
        var start = 0
        while start < work.count {
            let wave = work[start..<min(start + concurrency, work.count)]
            let tasks = wave.map { job in (job.key, job.value, Task { try await lookup.lookUp(job.value) }) }
            for (id, key, task) in tasks {
                let answer = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
                answers[id] = answer
                record(answer, for: key)
            }
            start += concurrency
        }
        return answers
    }

    /// Counts a finished lookup and logs a failed one.
    private func record(_ answer: Result<PurchaseLookupResult, any Error>, for key: PurchaseKey) {
        lookups.value.add(1, ordering: .relaxed)
        guard case .failure(let error) = answer else { return }
        let failure = FailureClassification(error)
        logger.log(level: failure.isTransient ? .warning : .error, "App Store Server API lookup failed", metadata: [
            "purchase": "\(key.coalescingKey)", "error.code": "\(failure.code)", "error": "\(failure.message)",
            "transient": "\(failure.isTransient)",
        ])
    }

    func output(for message: KafkaMessage, record: VerifiedRecord, enrichment: Enrichment) throws -> KafkaOutgoingMessage {
        let body = try EnrichedRecord(verified: record, enrichment: enrichment).encoded()
        logger.debug("enriched", metadata: [
            "kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)",
            "notificationUUID": "\(record.notificationUUID ?? "-")", "originalTransactionId": "\(record.originalTransactionId ?? "-")",
            "enrich.lookup": "\(enrichment.lookup.rawValue)", "enrich.history": "\(enrichment.history.count)",
        ])
        return KafkaOutgoingMessage(topic: outputTopic, key: message.key, value: body, headers: Self.headers(from: message.headers))
    }

    private func now() -> Date { AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: clock())) }

    /// The input's headers with `schema` replaced and any dead-letter headers of a replayed record dropped.
    static func headers(from input: [KafkaHeader]) -> [KafkaHeader] {
        var headers = input.filter { $0.key != PipelineHeader.schema && $0.key != PipelineHeader.contentType && !$0.key.hasPrefix("dlq-") }
        headers.append(KafkaHeader(key: PipelineHeader.contentType, string: "application/json"))
        headers.append(KafkaHeader(key: PipelineHeader.schema, string: Topics.enriched))
        return headers
    }
}

/// A counter shared by copies of the stage.
final class LookupCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// Completed lookups waiting for the retry of their records; each is used once, within a minute.
final class CarriedLookups: Sendable {
    private let entries = Mutex<[String: PurchaseLookupResult]>([:])
    static let maximumAge: TimeInterval = 60
    static let maximumEntries = 10_000

    func keep(_ key: String, _ result: PurchaseLookupResult) {
        entries.withLock { entries in
            if entries.count >= Self.maximumEntries { entries.removeAll() }
            entries[key] = result
        }
    }

    func take(_ key: String, now: Date) -> PurchaseLookupResult? {
        entries.withLock { entries in
            guard let result = entries.removeValue(forKey: key), now.timeIntervalSince(result.fetchedAt) < Self.maximumAge else { return nil }
            return result
        }
    }
}
