import EntitlementStore
import EventLoopTimers
import Foundation
import KafkaClient
import LogKeys
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Events grant committed, sampled: per partition, the last event committed in each of the last
/// ``window`` minutes. Spread over an hour rather than only the newest, because after a restore
/// grant goes on committing on top of the restored database, and within seconds the newest event
/// of every partition is one Postgres holds again.
public final class CommittedEventSamples: Sendable {
    private struct Sample {
        var minute: Int64
        var event: CommittedEvent
    }
    private let samples = Mutex<[KafkaTopicPartition: [Sample]]>([:])
    /// Minutes of samples kept per partition.
    public let window: Int

    public init(window: Int = 60) { self.window = max(1, window) }

    /// Notes `event` as committed for `partition` at `now`.
    public func committed(_ event: CommittedEvent, partition: KafkaTopicPartition, now: Date = Date()) {
        let minute = Int64(now.timeIntervalSince1970 / 60)
        samples.withLock { all in
            var kept = all[partition, default: []]
            if let last = kept.last, last.minute == minute {
                kept[kept.count - 1].event = event
            } else {
                kept.append(Sample(minute: minute, event: event))
                if kept.count > window { kept.removeFirst(kept.count - window) }
            }
            all[partition] = kept
        }
    }

    /// Every sample, oldest first per partition.
    public var events: [CommittedEvent] { samples.withLock { $0.values.flatMap { $0.map(\.event) } } }
}

/// Notices that Postgres lost work grant committed: a restore, or a failover to a standby that had
/// not received the last commits. Grant's committed offsets then run ahead of what Postgres holds,
/// and grant will not read those records again by itself (docs/operations.md, "After a database
/// restore or failover"). It asks Postgres for the sampled events (``CommittedEventSamples``) every
/// ``interval``, and before the first batch applied after a failed one: a database that went away
/// and came back behind is caught before anything new is committed on top of it, while the newest
/// samples are still the last commits before the failure. Rows of `notifications` are never
/// deleted, so one missing is proof. The finding is kept until the process restarts (the runbook
/// restarts grant): the loss does not heal by itself, even when new commits land on the restored
/// database.
///
/// `grant_committed_events_missing`: how many sampled events Postgres lost (0 while none); the
/// alert `GrantCommittedEventsMissing` fires on any.
public final class RestoreWatch: Service, Sendable {
    let store: EntitlementStore
    /// The events checked; the stage notes each batch's.
    public let samples = CommittedEventSamples()
    let interval: Duration
    let logger: Logger
    private let found = Mutex(0)
    /// Whether a batch failed to apply since the last check.
    private let applyFailed = Atomic(false)
    static let gauge = Gauge(label: "grant_committed_events_missing")

    public init(store: EntitlementStore, interval: Duration, logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    /// A batch failed to apply (Postgres unreachable, say): the next one checks first.
    func failedToApply() { applyFailed.store(true, ordering: .relaxed) }

    /// Checks before a batch is applied when the previous one failed.
    func checkIfRecovering() async {
        guard applyFailed.exchange(false, ordering: .relaxed) else { return }
        await check()
    }

    /// Sampled events Postgres no longer holds, found so far (the largest count seen).
    public var missingEvents: Int { found.withLock { $0 } }

    public func run() async throws {
        Self.gauge.record(missingEvents)
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await EventLoopTimer.sleep(for: self.interval) } catch { return }
                await self.check()
            }
        }
    }

    /// Asks Postgres for the sampled events once. A failing check says nothing: Postgres being
    /// unreachable is the stage's own alert.
    public func check() async {
        let events = samples.events
        let missing: [CommittedEvent]
        do {
            missing = try await store.missing(events)
        } catch {
            // Still unreachable: check again before the next batch.
            failedToApply()
            logger.debug("the committed-events check failed", error: error)
            return
        }
        guard !missing.isEmpty else { return }
        let count = found.withLock { found in
            found = max(found, missing.count)
            return found
        }
        Self.gauge.record(count)
        logger.critical(
            "Postgres no longer holds events grant committed: restored or failed over? The committed offsets are ahead of it; replay grant (docs/operations.md)",
            metadata: [
                LogKey.grantMissingEvents: "\(missing.count)", LogKey.grantEvent: "\(missing[0].environment)|\(missing[0].eventKey)",
            ])
    }
}
