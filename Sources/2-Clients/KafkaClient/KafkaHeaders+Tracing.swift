import Instrumentation

/// Reads trace context (W3C `traceparent`, `tracestate`) from a record's headers: the last header
/// with the key wins, as everywhere else a header is read.
public struct KafkaHeadersExtractor: Extractor {
    public init() {}

    public func extract(key: String, from carrier: [KafkaHeader]) -> String? { carrier.string(key) }
}

/// Writes trace context into a record's headers, replacing any header of the same key.
public struct KafkaHeadersInjector: Injector {
    public init() {}

    public func inject(_ value: String, forKey key: String, into carrier: inout [KafkaHeader]) {
        carrier.removeAll { $0.key == key }
        carrier.append(KafkaHeader(key: key, string: value))
    }
}
