/// Header names shared by every topic (schemas/headers.md documents them).
public enum PipelineHeader {
    /// Where the record came from: one of ``Source``.
    public static let source = "source"
    /// When the pipeline took the record in, ISO 8601 UTC with milliseconds: when ingest took the
    /// webhook or upload, or when the job that created the record (backfill, reconcile, a replay
    /// tool) made it. Carried unchanged to the verified and enriched topics.
    public static let ingestedAt = "ingested-at"
    /// The name ``ingestedAt`` had before: records already on a topic (raw is kept 35 days, and
    /// replays read it) carry it. Only read, as a fallback, by `KafkaMessage.ingestedAt`; never written.
    public static let legacyIngestedAt = "received-at"
    /// The HTTP request's id (`X-Request-Id` when the caller sent one), for tracing one delivery.
    public static let requestID = "request-id"
    /// The body's media type, `application/json`.
    public static let contentType = "content-type"
    /// W3C trace context, copied from the request when given and carried by every later stage.
    public static let traceparent = "traceparent"
    /// The body's schema, e.g. `appstore.notifications.raw.v1`.
    public static let schema = "schema"

    /// Values of the ``source`` header.
    public enum Source {
        public static let appleWebhook = "apple-webhook"
        public static let appUpload = "app-upload"
        /// A StoreKit 1 receipt an app uploaded (`POST /v1/receipts`): the transaction it names, to look up.
        public static let appReceipt = "app-receipt"
        public static let notificationHistory = "notification-history"
        public static let reconcile = "reconcile"
        /// A refund Get Refund History listed that grant did not know (`appstorectl refunds`).
        public static let refundHistory = "refund-history"
    }
}
