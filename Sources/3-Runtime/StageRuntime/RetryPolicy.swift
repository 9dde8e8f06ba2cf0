import Foundation
import KafkaClient

/// Capped exponential backoff with full jitter for transient failures. The record is retried in
/// place (its partition paused meanwhile) until it succeeds, fails permanently, the stage stops, or
/// the retry cap is reached.
///
/// The cap: once a record has failed ``capAttempts`` times over at least ``capTime`` *while the
/// rest of the stage made progress* (another record succeeded while it waited for its last
/// attempt), the failure is its own, not an outage (one purchase Apple answers 5xx for), and it is dead-lettered with its
/// attempts so the partition moves on. While nothing succeeds anywhere — Apple, the broker or
/// Postgres down — nothing is dead-lettered, however long it lasts.
public struct RetryPolicy: Sendable {
    public var initialDelay: Duration
    public var maximumDelay: Duration
    public var multiplier: Double
    /// Attempts before the cap may apply; 0: never capped.
    public var capAttempts: Int
    /// Time since the first failure before the cap may apply.
    public var capTime: Duration

    public init(
        initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(30), multiplier: Double = 2,
        capAttempts: Int = 10, capTime: Duration = .seconds(120)
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.capAttempts = capAttempts
        self.capTime = capTime
    }

    /// Whether a record that failed `attempts` times since `firstFailure` has reached the cap (the
    /// caller checks that the stage made progress meanwhile).
    public func capReached(attempts: Int, since firstFailure: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) -> Bool {
        capAttempts > 0 && attempts >= capAttempts && now - firstFailure >= capTime
    }

    /// The wait before attempt `attempt + 1` (attempt counts from 1). A dependency's own
    /// retry-after hint wins when it asks for longer, capped at ``maximumDelay``.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration? = nil) -> Duration {
        let exponent = Double(max(0, attempt - 1))
        let ceiling = min(Double(maximumDelay.milliseconds), Double(initialDelay.milliseconds) * pow(multiplier, exponent))
        // Full jitter between half the ceiling and the ceiling: spread, but never a busy loop.
        let jittered = Double.random(in: (ceiling / 2)...max(ceiling, 1))
        var chosen = Duration.milliseconds(Int64(jittered))
        if let retryAfter, retryAfter > chosen { chosen = retryAfter }
        return min(chosen, maximumDelay)
    }
}
