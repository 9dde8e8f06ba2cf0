import AppStore
import AppStoreServerAPI
import EnvironmentSettings
import ErrorClassification
import Foundation
import KafkaClient
import LogKeys
import Logging
import Metrics
import PipelineMessages
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
/// dead-letters the records of that purchase with Apple's code (`apple_api.<errorCode>`), except
/// that Apple's "transaction not found" (404 `4040010`) for a record carrying its own Apple-signed
/// transaction means the history does not show the purchase yet: the record is retried until
/// ``historyWait`` after it arrived, then enriched from that transaction alone (`transaction-only`),
/// so a customer who just paid is granted; the purchase's next event completes it from history.
///
/// Replays cost nothing: before any API call, a record whose event (``VerifiedRecord/eventKey``)
/// was enriched and delivered recently is dropped (``ReplayCache``), a repeat within the batch
/// shares its first occurrence's outcome, and a purchase looked up moments ago by an earlier batch
/// shares that answer when it was requested after the record arrived (``LookupCache``).
public struct EnrichStage: PipelineStage {
    /// The stage's caches across batches.
    public struct Caches: Sendable {
        /// Most event keys remembered as delivered; 0 turns replay dropping off.
        public var replayEntries: Int
        /// How long a lookup's answer may serve records of later batches; zero turns sharing off.
        public var lookupTimeToLive: Duration
        /// Most purchases whose answer is remembered.
        public var lookupEntries: Int

        public init(
            replayEntries: Int = EnrichConfiguration.replayCacheSize.defaultValue,
            lookupTimeToLive: Duration = EnrichConfiguration.lookupCacheTTL.defaultValue,
            lookupEntries: Int = EnrichConfiguration.lookupCacheSize.defaultValue
        ) {
            self.replayEntries = replayEntries
            self.lookupTimeToLive = lookupTimeToLive
            self.lookupEntries = lookupEntries
        }

        /// Nothing shared across batches: every record is looked up (or coalesced within its batch).
        public static let disabled = Caches(replayEntries: 0, lookupTimeToLive: .zero)
    }

    public let name = "enrich"
    let lookup: PurchaseLookup
    let outputTopic: String
    /// Signs each output for grant (``RecordKeys``); nil: outputs are not signed.
    let recordKeys: RecordKeys?
    /// Whether records of one batch for the same purchase share one lookup.
    public let coalesce: Bool
    let concurrency: Int
    /// How long a record waits for its purchase's history to show (see the type's comment).
    let historyWait: Duration
    let logger: Logger
    let clock: @Sendable () -> Date
    private let lookups = LookupCounter()
    /// Lookups that completed for records behind a transient failure, kept for the retry of those
    /// records so a partial outage or Apple's rate limiting does not repeat work already done.
    private let carried = CarriedLookups()
    /// Purchases whose lookup the limiter deferred, until their turn.
    private let deferred = DeferredLookups()
    let replays: ReplayCache
    let recent: LookupCache
    private let counters = CacheCounters()

    public init(
        lookup: PurchaseLookup, outputTopic: String = Topics.enriched, coalesce: Bool = true, concurrency: Int = 8,
        caches: Caches = Caches(), historyWait: Duration = EnrichConfiguration.historyWaitSetting.defaultValue,
        recordKeys: RecordKeys? = nil, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.lookup = lookup
        self.recordKeys = recordKeys
        self.historyWait = historyWait
        self.outputTopic = outputTopic
        self.coalesce = coalesce
        self.concurrency = max(1, concurrency)
        self.logger = logger
        self.clock = clock
        replays = ReplayCache(capacity: caches.replayEntries)
        recent = LookupCache(
            timeToLive: Double(caches.lookupTimeToLive.components.seconds) + Double(caches.lookupTimeToLive.components.attoseconds) / 1e18,
            capacity: caches.lookupEntries)
        // Both counters exist at zero from the start, so `rate()` sees the first burst.
        _ = (Self.replaysDroppedMetric, Self.lookupCacheHitsMetric, Self.historyNotVisibleMetric)
    }

    /// Purchase lookups performed so far (each is one history walk plus, for subscriptions, one status call).
    public var lookupsPerformed: Int { lookups.value.load(ordering: .relaxed) }
    /// Records dropped as replays so far: their event was delivered before, or repeats one earlier in the batch.
    public var replaysDropped: Int { counters.replays.load(ordering: .relaxed) }
    /// Records enriched from an earlier batch's answer so far.
    public var lookupCacheHits: Int { counters.lookupHits.load(ordering: .relaxed) }

    /// The runtime delivered these records' outputs: their events now count as enriched.
    public func delivered(_ inputs: [KafkaMessage]) {
        replays.delivered(inputs)
    }

    /// Spends the part of the App Store API budget that matches the part of the input this replica
    /// owns: the replicas of the group then share one budget per app, whatever their number.
    public func ownershipChanged(_ ownership: PartitionOwnership) {
        lookup.client.rateLimiter.setPart(ownership.share)
        logger.info(
            "App Store API budget follows the partitions owned",
            metadata: [LogKey.partitions: "\(ownership)", LogKey.appStoreBudgetShare: "\(lookup.client.rateLimiter.policy.share * ownership.share)"])
    }

    public func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
        try await process(batch: [message])[0].get()
    }

    public func process(batch: [KafkaMessage]) async throws -> [Result<[KafkaOutgoingMessage], any Error>] {
        // Decode and plan every record; drop replays before anything is looked up.
        var planned: [Step] = []
        var firstOfEvent: [String: Int] = [:]
        var rewritten: Set<Int> = []
        for (index, message) in batch.enumerated() {
            var record: VerifiedRecord
            do {
                record = try VerifiedRecord.decode(message.value)
            } catch {
                planned.append(
                    .failed(StageError.permanent(.malformedRecord, "the verified record does not decode: \(String(describing: error).prefix(300))"))
                )
                continue
            }
            if record.source == PipelineHeader.Source.appReceipt, record.transaction == nil {
                // A StoreKit 1 receipt names a transaction; Apple's signed copy of it makes the record an upload's.
                do {
                    record = try await lookup.receiptTransaction(record)
                    rewritten.insert(index)
                } catch {
                    planned.append(.failed(error))
                    continue
                }
            }
            if replays.isEnabled, let event = record.eventKey {
                let key = "\(record.environment.rawValue)|\(event)"
                if replays.wasDelivered(key) {
                    planned.append(.replay(record, of: nil))
                    continue
                }
                if let first = firstOfEvent[key] {
                    planned.append(.replay(record, of: first))
                    continue
                }
                firstOfEvent[key] = index
                replays.processing(message, key: key)
            }
            planned.append(.enrich(record, EnrichmentBuilder.plan(for: record)))
        }
        // One lookup per purchase (or per record without coalescing), concurrently, unless an
        // answer requested after the record arrived is at hand (carried from a retry, or recent).
        let startedAt = clock()
        var jobs: [LookupJob: PurchaseKey] = [:]
        var sourceOfRecord: [Int: AnswerSource] = [:]
        var answers: [AnswerSource: Result<PurchaseLookupResult, any Error>] = [:]
        var carriedHere: [String: PurchaseLookupResult?] = [:]
        for (index, item) in planned.enumerated() {
            guard case .enrich(let record, .history(let key)) = item else { continue }
            let arrival = LookupCache.arrival(ingestedAt: batch[index].ingestedAt, verifiedAt: record.verifiedAt)
            let purchase = key.coalescingKey
            if carriedHere[purchase] == nil { carriedHere[purchase] = .some(carried.take(purchase, now: startedAt)) }
            if let kept = carriedHere[purchase] ?? nil, LookupCache.serves(kept, fetchedFor: key, record: key, arrivedBy: arrival) {
                sourceOfRecord[index] = .carried(purchase: purchase)
                answers[.carried(purchase: purchase)] = .success(kept)
                continue
            }
            if let recent = recent.answer(for: key, arrivedBy: arrival, now: startedAt) {
                sourceOfRecord[index] = .recent(purchase: purchase)
                answers[.recent(purchase: purchase)] = .success(recent)
                counters.lookupHits.add(1, ordering: .relaxed)
                Self.lookupCacheHitsMetric.increment()
                continue
            }
            let job: LookupJob = coalesce ? .purchase(purchase) : .record(index)
            sourceOfRecord[index] = .lookup(job)
            if jobs[job] == nil { jobs[job] = key }
        }
        for (job, answer) in await run(jobs) {
            if case .success(let result) = answer, let key = jobs[job] { recent.keep(result, for: key) }
            answers[.lookup(job)] = answer
        }
        // Assemble in order; stop at the first transient failure (it and what follows are retried).
        var results: [Result<[KafkaOutgoingMessage], any Error>] = []
        for (index, item) in planned.enumerated() {
            let outcome: Result<[KafkaOutgoingMessage], any Error>
            switch item {
            case .failed(let error):
                outcome = .failure(error)
            case .replay(let record, let first):
                // A repeat shares its first occurrence's fate: dropped when that was enriched,
                // dead-lettered with it when it failed.
                if let first, case .failure(let error) = results[first] {
                    outcome = .failure(error)
                } else {
                    counters.replays.add(1, ordering: .relaxed)
                    logger.debug(
                        "replay dropped",
                        metadata: [
                            LogKey.partition: "\(batch[index].partition)", LogKey.offset: "\(batch[index].offset)",
                            LogKey.notificationUUID: "\(record.notificationUUID ?? "-")",
                            LogKey.originalTransactionId: "\(record.originalTransactionId ?? "-")",
                            LogKey.enrichReplayOf: "\(first.map { "offset \(batch[$0].offset) of this batch" } ?? "an event delivered before")",
                        ])
                    Self.replaysDroppedMetric.increment()
                    outcome = .success([])
                }
            case .enrich(let record, let plan):
                outcome = Result { () throws -> [KafkaOutgoingMessage] in
                    let enrichment: Enrichment
                    switch plan {
                    case .none: enrichment = EnrichmentBuilder.noneEnrichment(record: record, now: now())
                    case .transactionOnly: enrichment = EnrichmentBuilder.transactionOnlyEnrichment(record: record, now: now())
                    case .history:
                        switch answers[sourceOfRecord[index]!]! {
                        case .success(let answer):
                            enrichment = EnrichmentBuilder.historyEnrichment(record: record, lookup: answer)
                        case .failure(let error):
                            enrichment = try historyNotVisible(error, record: record, message: batch[index])
                        }
                    }
                    return [try output(for: batch[index], record: record, enrichment: enrichment, rewritten: rewritten.contains(index))]
                }
            }
            results.append(outcome)
            if case .failure(let error) = outcome, FailureClassification(error).isTransient {
                // Keep what was fetched for the records that will be retried.
                for later in (index + 1)..<planned.count {
                    guard let source = sourceOfRecord[later], case .success(let answer)? = answers[source],
                        case .enrich(_, .history(let key)) = planned[later]
                    else { continue }
                    carried.keep(key.coalescingKey, answer)
                }
                break
            }
        }
        return results
    }

    /// One App Store lookup of a batch: one per purchase when coalescing, else one per record.
    enum LookupJob: Hashable {
        case purchase(String)
        case record(Int)
    }

    /// Where a record's answer (its purchase's history) comes from.
    enum AnswerSource: Hashable {
        /// Looked up for this batch.
        case lookup(LookupJob)
        /// Looked up for an earlier try of this record, which a transient failure ahead of it cut short.
        case carried(purchase: String)
        /// Looked up moments ago for an earlier batch, after this record arrived.
        case recent(purchase: String)
    }

    /// What becomes of one record of a batch.
    enum Step {
        /// It does not decode.
        case failed(any Error)
        /// Its event was delivered before (`of` nil), or repeats the record at `of` in this batch.
        case replay(VerifiedRecord, of: Int?)
        /// It is enriched as planned.
        case enrich(VerifiedRecord, EnrichmentBuilder.Plan)
    }

    /// A record whose purchase Apple's history does not show yet (404 `4040010`) and that carries
    /// its own Apple-signed transaction: set aside (a deferral: only this purchase waits, its
    /// partition goes on) until ``historyWait`` after it arrived, then its `transaction-only`
    /// enrichment. Asked again after as long as it has waited (0.5 s at least, 5 s at most): Apple's
    /// lag is usually seconds, and a fixed 5 s made every such purchase wait 5 s or more. Any other
    /// failure is thrown as it is.
    func historyNotVisible(_ error: any Error, record: VerifiedRecord, message: KafkaMessage) throws -> Enrichment {
        guard let api = error as? AppStoreAPIError, api.errorCode == Self.transactionNotFound, record.transaction?.transactionId != nil
        else { throw error }
        let arrived = LookupCache.arrival(ingestedAt: message.ingestedAt, verifiedAt: record.verifiedAt)
        let waited = clock().timeIntervalSince(arrived)
        let limit = Double(historyWait.components.seconds) + Double(historyWait.components.attoseconds) / 1e18
        if waited < limit {
            throw StageError.deferred(
                StageError.Code(rawValue: api.code.rawValue),
                "Apple's history does not show the purchase yet (404 4040010); asked again for up to \(Int(limit)) s after the record arrived",
                retryAfter: .milliseconds(Int64(max(0.5, min(waited, 5, limit - waited)) * 1000)))
        }
        Self.historyNotVisibleMetric.increment()
        logger.warning(
            "history still not visible: enriched from the record's own signed transaction",
            metadata: [
                LogKey.partition: "\(message.partition)", LogKey.offset: "\(message.offset)",
                LogKey.originalTransactionId: "\(record.originalTransactionId ?? "-")", LogKey.errorCode: "\(api.code)",
            ])
        return EnrichmentBuilder.transactionOnlyEnrichment(record: record, now: now())
    }

    /// Apple's "Transaction id not found."
    static let transactionNotFound: Int64 = 4_040_010
    /// Records enriched from their own transaction because the history did not show the purchase
    /// within ``historyWait``: `enrich_history_not_visible_total`.
    static let historyNotVisibleMetric = Counter(label: "enrich_history_not_visible_total")
    /// Records dropped as replays, for operators: `enrich_replays_dropped_total`.
    static let replaysDroppedMetric = Counter(label: "enrich_replays_dropped_total")
    /// Records enriched from an earlier batch's answer: `enrich_lookup_cache_hits_total`.
    static let lookupCacheHitsMetric = Counter(label: "enrich_lookup_cache_hits_total")

    /// Runs the lookups, at most ``concurrency`` at a time: the next one starts as soon as one ends.
    /// A task group: an earlier note said its form crashed in release builds of an older toolchain,
    /// with no reproduction kept. With 6.3.1 it runs in release builds in `deploy/local/bench e2e`
    /// and in the container tests, whose enrich is a release build.
    func run(_ jobs: [LookupJob: PurchaseKey]) async -> [LookupJob: Result<PurchaseLookupResult, any Error>] {
        let lookUp = { @Sendable [lookup, deferred] (key: PurchaseKey) async throws -> PurchaseLookupResult in
            try deferred.checkTurn(key.coalescingKey, endpoint: AppStoreAPIEndpoint.transactionHistory.rawValue)
            do {
                return try await lookup.lookUp(key)
            } catch let error as AppStoreAPIError {
                deferred.keep(key.coalescingKey, after: error)
                throw error
            }
        }
        return await withTaskGroup(of: (LookupJob, PurchaseKey, Result<PurchaseLookupResult, any Error>).self) { group in
            var waiting = jobs.makeIterator()
            var running = 0
            while running < concurrency, let (job, key) = waiting.next() {
                group.addTask { (job, key, await Self.result { try await lookUp(key) }) }
                running += 1
            }
            var answers: [LookupJob: Result<PurchaseLookupResult, any Error>] = [:]
            while let (job, key, answer) = await group.next() {
                answers[job] = answer
                record(answer, for: key)
                if let (next, nextKey) = waiting.next() {
                    group.addTask { (next, nextKey, await Self.result { try await lookUp(nextKey) }) }
                }
            }
            return answers
        }
    }

    private static func result<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// Counts a finished lookup and logs a failed one. Apple's "transaction not found" is only
    /// a warning here: each record it answers is judged after (``historyNotVisible(_:record:message:)``
    /// sets aside one that carries its own transaction; the runtime logs any it dead-letters).
    private func record(_ answer: Result<PurchaseLookupResult, any Error>, for key: PurchaseKey) {
        lookups.value.add(1, ordering: .relaxed)
        guard case .failure(let error) = answer else { return }
        let failure = FailureClassification(error)
        let notFound = (error as? AppStoreAPIError)?.errorCode == Self.transactionNotFound
        logger.log(
            level: failure.isDeferral ? .debug : failure.isTransient || notFound ? .warning : .error, "App Store Server API lookup failed",
            metadata: [
                LogKey.enrichPurchase: "\(key.coalescingKey)", LogKey.errorCode: "\(failure.code)", LogKey.errorMessage: "\(failure.message)",
                LogKey.errorTransient: "\(failure.isTransient)",
            ])
    }

    /// - Parameter rewritten: `record` is not `message.value` as it came (a receipt's, which now
    ///   carries Apple's transaction): it is written anew and keyed by its purchase.
    func output(for message: KafkaMessage, record: VerifiedRecord, enrichment: Enrichment, rewritten: Bool = false) throws -> KafkaOutgoingMessage {
        // Otherwise `record` is `message.value` decoded and unchanged: its bytes go out as they came.
        let body = try EnrichedRecord.encoded(verifiedBody: rewritten ? try record.encoded() : message.value, enrichment: enrichment)
        logger.debug(
            "enriched",
            metadata: [
                LogKey.partition: "\(message.partition)", LogKey.offset: "\(message.offset)",
                LogKey.notificationUUID: "\(record.notificationUUID ?? "-")", LogKey.originalTransactionId: "\(record.originalTransactionId ?? "-")",
                LogKey.enrichLookup: "\(enrichment.lookup.rawValue)", LogKey.enrichHistory: "\(enrichment.history.count)",
            ])
        let key = rewritten ? record.key.map { Array($0.utf8) } ?? message.key : message.key
        return EnrichedMessage.make(body: body, key: key, topic: outputTopic, following: message.headers, keys: recordKeys)
    }

    private func now() -> Date { AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: clock())) }
}

/// A counter shared by copies of the stage.
final class LookupCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// Counters of the caches, shared by copies of the stage.
final class CacheCounters: Sendable {
    let replays = Atomic<Int>(0)
    let lookupHits = Atomic<Int>(0)
}

/// Completed lookups waiting for the retry of their records; each is used once, within a minute,
/// and only by records that arrived before it was requested (as every answer).
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
