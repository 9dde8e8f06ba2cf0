import Foundation

/// How the player delivers notifications: Apple's retry schedule on the compressed clock, and the
/// disorder real deliveries have (duplicates, delays, reordering, losses).
public struct DeliveryOptions: Sendable, Hashable {
    /// Share of notifications delivered a second time (same `notificationUUID`), 0…1.
    public var duplicateRate: Double = 0
    /// Each delivery waits a random time up to this before it is sent.
    public var maxDelay: Duration = .zero
    /// Deliveries are shuffled within windows of this many notifications (1: in order).
    public var reorderWindow: Int = 1
    /// Share of notifications that never reach the webhook (Apple records `NO_RESPONSE` and, as in
    /// the sandbox, does not retry), 0…1: what backfill and reconcile must recover.
    public var dropRate: Double = 0
    /// Waits between attempts after a failed delivery: Apple's 1, 12, 24, 48 and 72 hours, scaled
    /// to the simulation's clock by ``retrySchedule(month:)``.
    public var retryDelays: [Duration] = []
    /// How long one attempt may take before it counts as `TIMED_OUT`.
    public var timeout: Duration = .seconds(10)
    /// Deliveries in flight at once.
    public var concurrency: Int = 32
    /// Steps played per second (`nil`: as fast as the records and deliveries allow).
    public var stepsPerSecond: Double?

    public init() {}

    /// Apple's production retry schedule (1, 12, 24, 48, 72 hours after the previous attempt) on a
    /// clock where one month lasts `month` seconds.
    public static func retrySchedule(month: TimeInterval) -> [Duration] {
        let hour = month / (30 * 24)
        return [1, 12, 24, 48, 72].map { Duration.milliseconds(Int64(($0 * hour * 1000).rounded())) }
    }
}
