/// Settings shared by every client. Curated fields for what this project tunes, plus
/// ``properties``: any librdkafka setting passes through unchanged (TLS, SASL, tuning).
public struct KafkaClientConfiguration: Sendable {
    /// `bootstrap.servers`: comma-separated `host:port` list.
    public var bootstrapServers: String
    /// `client.id`, shown in broker logs.
    public var clientID: String
    /// Any other librdkafka property, e.g. `security.protocol`, `sasl.mechanisms`, `ssl.ca.location`.
    /// Applied last, so it overrides the curated fields.
    public var properties: [String: String]

    public init(bootstrapServers: String, clientID: String = "appstore-entitlements", properties: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
        self.properties = properties
    }

    var baseProperties: [String: String] {
        ["bootstrap.servers": bootstrapServers, "client.id": clientID]
    }
}

/// `compression.type`: how a producer compresses its record batches. The broker keeps and serves
/// them compressed; consumers decompress.
public enum KafkaCompression: String, Sendable, CaseIterable {
    case none, gzip, snappy, lz4, zstd
}

/// Producer settings. Idempotence and `acks=all` are always on: a record is only reported
/// delivered once every in-sync replica has it, and retries never duplicate or reorder it.
public struct KafkaProducerConfiguration: Sendable {
    public var client: KafkaClientConfiguration
    /// `message.timeout.ms`: how long librdkafka keeps trying to deliver one record before
    /// reporting failure. Keep it shorter than any caller-side deadline that answers for the record.
    public var deliveryTimeout: Duration
    /// `linger.ms`: how long to wait to fill a batch. Small values keep latency low.
    public var linger: Duration
    /// `queue.buffering.max.messages`: the local queue bound; beyond it `send` fails with `queueFull`.
    public var maxQueuedMessages: Int
    /// `message.max.bytes`: records larger than this are refused locally.
    public var maxMessageBytes: Int
    /// `compression.type`. lz4 by default: the records are JSON around JWS, which compress well, so
    /// the broker, the network and the disk handle fewer bytes (on the local broker, its CPU per
    /// notification while unpaced fell from 2.04–2.07 ms to 1.21–1.67 ms; the stages spent no more).
    public var compression: KafkaCompression

    public init(
        client: KafkaClientConfiguration,
        deliveryTimeout: Duration = .seconds(30),
        linger: Duration = .milliseconds(2),
        maxQueuedMessages: Int = 100_000,
        maxMessageBytes: Int = 1_000_000,
        compression: KafkaCompression = .lz4
    ) {
        self.client = client
        self.deliveryTimeout = deliveryTimeout
        self.linger = linger
        self.maxQueuedMessages = maxQueuedMessages
        self.maxMessageBytes = maxMessageBytes
        self.compression = compression
    }

    var librdkafkaProperties: [String: String] {
        var p = client.baseProperties
        p["enable.idempotence"] = "true"
        p["acks"] = "all"
        p["message.timeout.ms"] = String(deliveryTimeout.milliseconds)
        p["linger.ms"] = String(linger.milliseconds)
        p["queue.buffering.max.messages"] = String(maxQueuedMessages)
        p["message.max.bytes"] = String(maxMessageBytes)
        p["compression.type"] = compression.rawValue
        p["log.queue"] = "true"
        return p.merging(client.properties) { _, override in override }
    }
}

/// Consumer-group settings. Offsets are never committed automatically: the application stores
/// the offset of each record it finished, and the consumer commits stored offsets periodically,
/// on partition revocation and on close.
public struct KafkaConsumerConfiguration: Sendable {
    /// How partitions are spread over a group's members.
    public enum Assignor: String, Sendable, CaseIterable {
        /// Incremental rebalancing: members keep what they own while partitions move.
        case cooperativeSticky = "cooperative-sticky"
        case range
        case roundRobin = "roundrobin"
    }

    public var client: KafkaClientConfiguration
    public var groupID: String
    public var topics: [String]
    public var assignor: Assignor
    /// `session.timeout.ms`: how long the group waits for a silent member before moving its partitions.
    public var sessionTimeout: Duration
    /// `heartbeat.interval.ms`.
    public var heartbeatInterval: Duration
    /// `fetch.wait.max.ms`: the broker holds an empty fetch at most this long. Low values, low latency.
    public var fetchWaitMax: Duration
    /// `max.poll.interval.ms`: a member that stops polling for longer leaves the group.
    public var maxPollInterval: Duration
    /// How often stored offsets are committed in the background.
    public var commitInterval: Duration
    /// `auto.offset.reset` for a group with no committed offset. `earliest` never skips data.
    public var autoOffsetReset: String

    public init(
        client: KafkaClientConfiguration,
        groupID: String,
        topics: [String],
        assignor: Assignor = .cooperativeSticky,
        sessionTimeout: Duration = .seconds(10),
        heartbeatInterval: Duration = .seconds(3),
        fetchWaitMax: Duration = .milliseconds(500),
        maxPollInterval: Duration = .seconds(300),
        commitInterval: Duration = .seconds(1),
        autoOffsetReset: String = "earliest"
    ) {
        self.client = client
        self.groupID = groupID
        self.topics = topics
        self.assignor = assignor
        self.sessionTimeout = sessionTimeout
        self.heartbeatInterval = heartbeatInterval
        self.fetchWaitMax = fetchWaitMax
        self.maxPollInterval = maxPollInterval
        self.commitInterval = commitInterval
        self.autoOffsetReset = autoOffsetReset
    }

    var librdkafkaProperties: [String: String] {
        var p = client.baseProperties
        p["group.id"] = groupID
        p["partition.assignment.strategy"] = assignor.rawValue
        p["session.timeout.ms"] = String(sessionTimeout.milliseconds)
        p["heartbeat.interval.ms"] = String(heartbeatInterval.milliseconds)
        p["fetch.wait.max.ms"] = String(fetchWaitMax.milliseconds)
        p["max.poll.interval.ms"] = String(maxPollInterval.milliseconds)
        p["auto.offset.reset"] = autoOffsetReset
        p["enable.auto.commit"] = "false"
        p["enable.auto.offset.store"] = "false"
        p["enable.partition.eof"] = "false"
        p["log.queue"] = "true"
        return p.merging(client.properties) { _, override in override }
    }
}

extension Duration {
    /// Whole nanoseconds.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Whole milliseconds, rounded down.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
