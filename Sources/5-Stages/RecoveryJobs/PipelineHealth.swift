import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords

/// `appstorectl status`: the stages as the broker sees them, the outbox as Postgres sees it, and
/// what needs an operator's attention. Healthy means: no stage has records waiting with nobody in
/// its group or on partitions no member holds, no dead letter waits for a replay, the oldest unpublished outbox row is younger than
/// the threshold, and everything could be read.
public struct PipelineHealth: Sendable, Encodable {
    /// One thing that needs attention.
    public struct Problem: Sendable, Hashable, OperatorJSONObject {
        /// `stalled` (lag and no group member), `unowned` (lag on partitions no member holds while
        /// the group has members), `dead_letters` (not yet replayed), `outbox_backlog`
        /// (oldest unpublished row older than the threshold), `unreadable` (part of the status could not be read).
        public var kind: String
        public var stage: String?
        /// The dead letters' error code, for `dead_letters`.
        public var code: String?
        public var detail: String
    }

    public var checkedAt: Date
    public var stages: [StageStatus]
    /// `nil` when Postgres was not configured (or not asked).
    public var outbox: OutboxBacklog?
    public var outboxError: String?
    /// Seconds an unpublished outbox row may wait before it counts as a problem.
    public var maxOutboxAgeSeconds: Double
    /// The newest mass renewal extensions (`appstorectl extend-all`), open and finished, as recorded;
    /// `nil` when Postgres was not configured or could not tell. Informational: never a problem.
    public var massExtensions: [MassRenewalExtensionStatus]?

    public init(
        checkedAt: Date = Date(), stages: [StageStatus], outbox: OutboxBacklog?, outboxError: String? = nil, maxOutboxAgeSeconds: Double,
        massExtensions: [MassRenewalExtensionStatus]? = nil
    ) {
        self.checkedAt = checkedAt
        self.massExtensions = massExtensions
        self.stages = stages
        self.outbox = outbox
        self.outboxError = outboxError
        self.maxOutboxAgeSeconds = maxOutboxAgeSeconds
    }

    public var problems: [Problem] {
        var problems: [Problem] = []
        for stage in stages {
            for error in stage.errors { problems.append(Problem(kind: "unreadable", stage: stage.stage, detail: error)) }
            if let members = stage.members, members.isEmpty, stage.knownLag > 0 {
                let waiting = stage.partitions.filter { ($0.lag ?? 0) > 0 }.map { "partition \($0.partition): \($0.lag ?? 0)" }
                problems.append(
                    Problem(
                        kind: "stalled", stage: stage.stage,
                        detail: "\(stage.stage): lag \(stage.knownLag) (\(waiting.joined(separator: ", "))) and no member in group \(stage.group)"))
            }
            let unowned = stage.unownedPartitions
            if !unowned.isEmpty {
                let waiting = unowned.map { "partition \($0.partition): \($0.lag ?? 0)" }
                problems.append(
                    Problem(
                        kind: "unowned", stage: stage.stage,
                        detail:
                            "\(stage.stage): \(waiting.joined(separator: ", ")) waiting, and no member of group \(stage.group) holds "
                            + "\(unowned.count == 1 ? "it" : "them") (\(stage.members?.count ?? 0) member(s)); restart the stage's "
                            + "members, or the broker if a new member gets nothing either"))
            }
            for count in stage.deadLetters ?? [] where count.notReplayed > 0 {
                problems.append(
                    Problem(
                        kind: "dead_letters", stage: stage.stage, code: count.code,
                        detail:
                            "\(stage.stage): \(count.notReplayed) dead letter(s) with code \(count.code) not yet replayed (\(stage.deadLetterTopic))")
                )
            }
        }
        if let outboxError { problems.append(Problem(kind: "unreadable", detail: "outbox: \(outboxError)")) }
        if let outbox, let age = outbox.oldestAgeSeconds, age > maxOutboxAgeSeconds {
            problems.append(
                Problem(
                    kind: "outbox_backlog",
                    detail:
                        "outbox: \(outbox.unpublished) unpublished change(s), the oldest \(Int(age)) s old (more than \(Int(maxOutboxAgeSeconds)) s)")
            )
        }
        return problems
    }

    public var healthy: Bool { problems.isEmpty }

    enum CodingKeys: String, CodingKey { case healthy, checkedAt, stages, outbox, outboxError, maxOutboxAgeSeconds, massExtensions, problems }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(healthy, forKey: .healthy)
        try c.encode(checkedAt, forKey: .checkedAt)
        try c.encode(stages, forKey: .stages)
        try c.encodeAlways(outbox, forKey: .outbox)
        try c.encodeAlways(outboxError, forKey: .outboxError)
        try c.encode(maxOutboxAgeSeconds, forKey: .maxOutboxAgeSeconds)
        try c.encodeAlways(massExtensions, forKey: .massExtensions)
        try c.encode(problems, forKey: .problems)
    }

    /// The status as text for a terminal.
    public var text: String {
        func ago(_ date: Date?) -> String {
            guard let date else { return "never" }
            let seconds = Int(checkedAt.timeIntervalSince(date).rounded())
            let age =
                seconds < 120
                ? "\(seconds) s" : seconds < 7200 ? "\(seconds / 60) min" : seconds < 172_800 ? "\(seconds / 3600) h" : "\(seconds / 86_400) d"
            return "\(Timestamp.iso8601(date)) (\(age) ago)"
        }
        var lines: [String] = []
        for stage in stages {
            let members: String
            if let list = stage.members {
                let who = list.map { member in
                    let holds = member.assignment.map { assigned in
                        let mine = assigned.filter { $0.topic == stage.inputTopic }.map(\.partition).sorted()
                        return mine.isEmpty ? " holding no partition" : " holding " + mine.map { "p\($0)" }.joined(separator: ",")
                    }
                    return (member.clientID.isEmpty ? member.memberID : member.clientID) + (member.host.isEmpty ? "" : " " + member.host)
                        + (holds ?? "")
                }
                members = "\(list.count) member(s)" + (who.isEmpty ? "" : ": " + who.joined(separator: ", "))
            } else {
                members = "members unknown"
            }
            lines.append("\(stage.stage): group \(stage.group) \(stage.groupState.map { "(\($0)) " } ?? "")— \(members)")
            if stage.partitionsRead {
                let lag = stage.lag.map(String.init) ?? (stage.knownLag > 0 ? "unknown (at least \(stage.knownLag))" : "unknown")
                lines.append("  input \(stage.inputTopic): lag \(lag), last record \(ago(stage.lastRecordAt))")
            } else {
                lines.append("  input \(stage.inputTopic): lag unknown, last record unknown")
            }
            let lagging = stage.partitions.filter { $0.lag != 0 }
            if !lagging.isEmpty {
                lines.append(
                    "    " + "partition".padding(toLength: 11, withPad: " ", startingAt: 0)
                        + "committed".padding(toLength: 12, withPad: " ", startingAt: 0)
                        + "end".padding(toLength: 10, withPad: " ", startingAt: 0) + "lag")
                for p in lagging {
                    lines.append(
                        "    " + String(p.partition).padding(toLength: 11, withPad: " ", startingAt: 0)
                            + (p.committed.map(String.init) ?? "-").padding(toLength: 12, withPad: " ", startingAt: 0)
                            + String(p.end).padding(toLength: 10, withPad: " ", startingAt: 0) + (p.lag.map(String.init) ?? "unknown"))
                }
            }
            if let letters = stage.deadLetters {
                let total = letters.reduce(0) { $0 + $1.total }
                let detail = letters.map { "\($0.code) \($0.total) (\($0.notReplayed) not replayed)" }
                lines.append("  dead letters \(stage.deadLetterTopic): \(total)" + (detail.isEmpty ? "" : " — " + detail.joined(separator: ", ")))
            } else {
                lines.append("  dead letters \(stage.deadLetterTopic): unknown")
            }
        }
        if let outbox {
            lines.append("outbox: \(outbox.unpublished) unpublished" + (outbox.oldestCreatedAt.map { ", oldest \(ago($0))" } ?? ""))
        } else if let outboxError {
            lines.append("outbox: unknown (\(outboxError))")
        } else {
            lines.append("outbox: not checked (no POSTGRES_* settings)")
        }
        for m in massExtensions ?? [] {
            let state =
                m.appleOutcome == "refused"
                ? "refused by Apple (\(m.appleError ?? "?"))"
                : m.reportedComplete.map { "finished \(ago($0)): \(m.reportedSucceededCount ?? 0) extended, \(m.reportedFailedCount ?? 0) failed" }
                    ?? "open, \(m.failedOriginalTransactionIds.count) failure(s) reported so far"
            lines.append(
                "mass extension \(m.requestIdentifier): \(m.productId) +\(m.extendByDays)d, asked \(ago(m.requestedAt)) by \(m.requestedBy) — \(state)"
            )
        }
        let problems = self.problems
        if problems.isEmpty {
            lines.append("healthy")
        } else {
            lines.append("needs attention:")
            for problem in problems { lines.append("  \(problem.kind): \(problem.detail)") }
        }
        return lines.joined(separator: "\n")
    }
}
