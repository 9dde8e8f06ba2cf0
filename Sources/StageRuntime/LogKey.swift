/// The metadata keys every process logs with, named once: a log query or a JSON log pipeline
/// filters on these, so a key is never spelt two ways.
public enum LogKey {
    /// The stage (`ingest`, `verify`, `enrich`, `grant`) a line comes from.
    public static let stage = "pipeline.stage"
    public static let topic = "kafka.topic"
    public static let partition = "kafka.partition"
    public static let offset = "kafka.offset"
    public static let group = "kafka.group"
    public static let notificationUUID = "notificationUUID"
    public static let notificationType = "notificationType"
    public static let originalTransactionId = "originalTransactionId"
    public static let transactionId = "transactionId"
    public static let requestID = "request.id"
    public static let httpPort = "http.port"
    /// The error, as its description (swift-log's `error:` parameter is written under this key too).
    public static let error = "error"
    /// The Swift type of swift-log's `error:` parameter.
    public static let errorType = "error.type"
    /// A stable, typed error code (`verify.bad_signature`, `store.unavailable`, …).
    public static let errorCode = "error.code"
    public static let errorMessage = "error.message"
    public static let attempt = "attempt"
    public static let note = "note"
}
