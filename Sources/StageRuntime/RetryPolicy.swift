import Foundation
import KafkaClient

/// Capped exponential backoff with full jitter for transient failures. The record is retried in
/// place (its partition paused meanwhile) until it succeeds, fails permanently or the stage stops.
public struct RetryPolicy: Sendable {
    public var initialDelay: Duration
    public var maximumDelay: Duration
    public var multiplier: Double

    public init(initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(30), multiplier: Double = 2) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
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
