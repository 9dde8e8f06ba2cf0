import AppStore
import Foundation
import GrantDecision
import Metrics

/// The metrics grant reports about what it committed, its outbox and its consumption requests
/// (names and labels are fixed: alert rules and the dashboard in deploy/monitoring use them).
///
/// - `notifications_total{type, subtype, outcome}`: every event a committed transaction recorded;
///   `type` is Apple's `notificationType` or `APP_UPLOAD`, `subtype` Apple's subtype or "", and
///   `outcome` the notifications table's (`applied`, `stale`, `recorded`) or `duplicate` when the
///   event had been recorded before.
/// - `entitlement_latency_seconds{environment}` (histogram): from ingest's receipt of the record
///   (its `ingested-at` header) to the commit that recorded it; duplicates are not measured.
/// - `outbox_unpublished_rows`, `outbox_oldest_unpublished_age_seconds`: the outbox backlog.
/// - `consumption_requests_pending`, `consumption_request_deadline_seconds`: requests still to
///   answer and the seconds until the earliest of their deadlines (``noDeadlineSeconds`` when none).
/// - `renewal_extension_results_total{result}`: subscriptions Apple's mass extensions extended
///   (`succeeded`) or could not (`failed`), as their `RENEWAL_EXTENSION/SUMMARY` counts them (counted
///   once, when the summary is first committed).
public enum GrantMetrics {
    /// What `consumption_request_deadline_seconds` says when no request is waiting.
    public static let noDeadlineSeconds: Double = 86_400

    /// Creates the latency histograms at zero when grant starts. A series that first appears with
    /// a whole batch already in it shows no increase to `rate()`, so the first burst after a start
    /// would be invisible to the latency panel and alert.
    public static func registerAtZero() {
        for environment in ["Production", "Sandbox"] {
            _ = Timer(label: "entitlement_latency_seconds", dimensions: [("environment", environment)], preferredDisplayUnit: .seconds)
        }
    }

    /// Counts and times the events of one committed transaction, `committedAt` being the commit.
    /// Each series is looked up once per transaction, not once per event: with batches of hundreds
    /// of events the lookups had been a twentieth of grant's CPU.
    public static func committed(_ decisions: [Result<GrantDecision, GrantRejection>], committedAt: Date = Date()) {
        struct Series: Hashable {
            var type: String
            var subtype: String
            var outcome: String
        }
        var counts: [Series: Int] = [:]
        var latencies: [String: [Int64]] = [:]
        for case .success(let decision) in decisions {
            let event = decision.event
            counts[Series(type: event.typeName, subtype: event.subtype?.rawValue ?? "", outcome: decision.outcome.rawValue), default: 0] += 1
            if decision.outcome != .duplicate, let report = event.massExtension, report.report == .summary {
                Counter(label: "renewal_extension_results_total", dimensions: [("result", "succeeded")])
                    .increment(by: Int(report.succeededCount ?? 0))
                Counter(label: "renewal_extension_results_total", dimensions: [("result", "failed")]).increment(by: Int(report.failedCount ?? 0))
            }
            guard decision.outcome != .duplicate, let ingested = event.ingestedAt else { continue }
            let seconds = max(0, committedAt.timeIntervalSince(ingested))
            latencies[event.environment, default: []].append(Int64(min(seconds, 1e9) * 1e9))
        }
        for (series, count) in counts {
            Counter(label: "notifications_total", dimensions: [("type", series.type), ("subtype", series.subtype), ("outcome", series.outcome)])
                .increment(by: count)
        }
        for (environment, nanoseconds) in latencies {
            let timer = Timer(label: "entitlement_latency_seconds", dimensions: [("environment", environment)], preferredDisplayUnit: .seconds)
            for value in nanoseconds { timer.recordNanoseconds(value) }
        }
    }

    /// Records the outbox backlog.
    public static func outbox(_ backlog: PendingOutbox) {
        Gauge(label: "outbox_unpublished_rows").record(backlog.unpublishedRows)
        Gauge(label: "outbox_oldest_unpublished_age_seconds").record(backlog.oldestAgeSeconds)
    }

    /// Records the consumption requests still to answer.
    public static func consumption(_ backlog: PendingConsumptionRequests, now: Date = Date()) {
        Gauge(label: "consumption_requests_pending").record(backlog.pending)
        let seconds = backlog.earliestDeadline.map { $0.timeIntervalSince(now) } ?? noDeadlineSeconds
        Gauge(label: "consumption_request_deadline_seconds").record(seconds)
    }
}

/// The rows of `outbox` not yet published and the age of the oldest.
public struct PendingOutbox: Hashable, Sendable {
    public var unpublishedRows: Int
    /// When the oldest unpublished row was written; nil when there is none.
    public var oldestCreatedAt: Date?
    /// Seconds since the oldest unpublished row was written; 0 when there is none.
    public var oldestAgeSeconds: Double
    public init(unpublishedRows: Int, oldestCreatedAt: Date? = nil, oldestAgeSeconds: Double) {
        self.unpublishedRows = unpublishedRows
        self.oldestCreatedAt = oldestCreatedAt
        self.oldestAgeSeconds = oldestAgeSeconds
    }
}

/// The consumption requests still to answer and the earliest of their deadlines.
public struct PendingConsumptionRequests: Hashable, Sendable {
    public var pending: Int
    public var earliestDeadline: Date?
    public init(pending: Int, earliestDeadline: Date?) {
        self.pending = pending
        self.earliestDeadline = earliestDeadline
    }
}
