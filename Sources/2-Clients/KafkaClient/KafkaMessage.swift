import Foundation

/// A topic and a partition: the unit of ordering, assignment and offsets.
public struct KafkaTopicPartition: Hashable, Sendable, Codable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32
    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }
    public var description: String { "\(topic)[\(partition)]" }
}

/// One record header. Kafka allows a null value, kept as `nil`.
public struct KafkaHeader: Hashable, Sendable {
    public var key: String
    public var value: [UInt8]?
    public init(key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }
    public init(key: String, string: String) {
        self.init(key: key, value: Array(string.utf8))
    }
    /// The value as UTF-8 text, when it is some.
    public var stringValue: String? { value.map { String(decoding: $0, as: UTF8.self) } }
}

extension Array where Element == KafkaHeader {
    /// The last header with this key, as text (Kafka allows repeats; the last one wins).
    public func string(_ key: String) -> String? { last(where: { $0.key == key })?.stringValue }
}

/// A record to produce.
public struct KafkaOutgoingMessage: Sendable {
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// A fixed partition, or `nil` to let the partitioner hash the key.
    public var partition: Int32?

    public init(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [], partition: Int32? = nil) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    public init(topic: String, key: String?, value: [UInt8], headers: [KafkaHeader] = []) {
        self.init(topic: topic, key: key.map { Array($0.utf8) }, value: value, headers: headers)
    }
}

/// The broker's acknowledgement of a produced record.
public struct KafkaDeliveryReport: Hashable, Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
}

/// A consumed record.
public struct KafkaMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// The record's timestamp (create or log-append time), when the broker gave one.
    public var timestamp: Date?

    public init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        timestamp: Date?
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
    }

    public var topicPartition: KafkaTopicPartition { KafkaTopicPartition(topic: topic, partition: partition) }
    public var keyString: String? { key.map { String(decoding: $0, as: UTF8.self) } }
}
