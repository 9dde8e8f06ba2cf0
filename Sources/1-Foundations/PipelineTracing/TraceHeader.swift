import W3CTraceContext

/// The W3C trace context headers, as HTTP and Kafka records carry them, and the one check every
/// place that accepts a `traceparent` from outside uses.
public enum TraceHeader {
    public static let traceparent = "traceparent"
    public static let tracestate = "tracestate"

    /// `value` when it is a `traceparent` W3C allows a receiver to continue: version `00`, lowercase
    /// hex, a trace ID and a parent ID that are not all zeros. Anything else (version `ff`, bad hex,
    /// all-zero IDs, a later version's longer form) is nil: a new trace starts instead of one that
    /// points nowhere.
    public static func validTraceparent(_ value: String) -> String? {
        guard (try? TraceContext(traceParentHeaderValue: value)) != nil,
            !value.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") })
        else { return nil }
        return value
    }

    /// `value` when it is a `tracestate` W3C allows (at most 32 `key=value` members), else nil: a
    /// bad `tracestate` is dropped on its own, never the `traceparent` beside it.
    public static func validTracestate(_ value: String) -> String? {
        guard value.utf8.count <= 512,
            let context = try? TraceContext(traceParentHeaderValue: someTraceparent, traceStateHeaderValue: value),
            !context.state.isEmpty, context.state.count <= 32
        else { return nil }
        return value
    }

    /// A valid `traceparent`, the frame the library's `tracestate` parser needs around the value.
    private static let someTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
}
