/// The topic catalogue of schemas/topics.json as constants (a test keeps the two equal).
public enum Topics {
    public static let raw = "appstore.notifications.raw.v1"
    public static let verified = "appstore.notifications.verified.v1"
    public static let enriched = "appstore.notifications.enriched.v1"
    public static let entitlementChanges = "entitlements.changes.v1"
    public static let verifyDeadLetters = "appstore.verify.dlq.v1"
    public static let enrichDeadLetters = "appstore.enrich.dlq.v1"
    public static let grantDeadLetters = "appstore.grant.dlq.v1"

    /// Every topic with its partition count, as `deploy/local/up` creates them.
    public static let catalogue: [(name: String, partitions: Int)] = [
        (raw, 8), (verified, 8), (enriched, 8), (entitlementChanges, 8),
        (verifyDeadLetters, 2), (enrichDeadLetters, 2), (grantDeadLetters, 2),
    ]
}
