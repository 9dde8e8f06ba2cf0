import Foundation

/// What one playback did: the figures an end-to-end test prints and checks.
public struct PlaybackReport: Sendable, Hashable, Codable {
    /// Steps applied to Apple's records.
    public var steps = 0
    /// Distinct notifications Apple sent.
    public var notifications = 0
    /// Notifications answered 2xx at least once.
    public var delivered = 0
    /// Extra deliveries of the same notification (duplicates on purpose).
    public var duplicates = 0
    /// Notifications deliberately lost before the webhook.
    public var dropped = 0
    /// Notifications never answered 2xx after every retry.
    public var undelivered = 0
    /// Attempts that failed and were retried.
    public var retries = 0
    /// App uploads answered 2xx.
    public var uploads = 0
    /// UUIDs of the dropped and undelivered notifications (for recovery tests).
    public var lostNotificationUUIDs: [String] = []
    /// UUIDs of the notifications answered 2xx: what the webhook acknowledged, so what must be recorded.
    public var deliveredNotificationUUIDs: [String] = []
    /// The transaction ID each upload answered 2xx named (its purchase's). A count would not do: an attempt whose answer was
    /// lost (a stage killed mid-request) can reach the pipeline too, and a receipt's lookup signs anew.
    public var uploadedTransactionIds: [String] = []

    public init() {}
}
