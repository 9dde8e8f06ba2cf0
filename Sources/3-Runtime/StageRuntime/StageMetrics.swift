import Metrics

/// Every metric a stage reports, with fixed label names (Prometheus refuses a name registered
/// with two label sets). Names follow Prometheus conventions.
public struct StageMetrics: Sendable {
    public let stage: String
    let consumed: Counter
    let produced: Counter
    let retried: Counter
    let parked: Counter
    let succeeded: Counter
    let processing: Timer

    public init(stage: String) {
        self.stage = stage
        let dims = [("stage", stage)]
        consumed = Counter(label: "pipeline_messages_consumed_total", dimensions: dims)
        produced = Counter(label: "pipeline_messages_produced_total", dimensions: dims)
        retried = Counter(label: "pipeline_retries_total", dimensions: dims)
        parked = Counter(label: "pipeline_records_parked_total", dimensions: dims)
        succeeded = Counter(label: "pipeline_messages_processed_total", dimensions: dims)
        processing = Timer(label: "pipeline_processing_duration_seconds", dimensions: dims, preferredDisplayUnit: .seconds)
    }

    func deadLettered(code: String) {
        Counter(label: "pipeline_messages_dead_lettered_total", dimensions: [("stage", stage), ("code", code)]).increment()
    }

    func lag(topic: String, partition: Int32, value: Int64) {
        Gauge(label: "pipeline_consumer_lag", dimensions: [("stage", stage), ("topic", topic), ("partition", String(partition))])
            .record(value)
    }

    /// Partitions of the input with lag held by no member of the group, counted by a member that
    /// holds none (the alert StagePartitionsUnowned).
    func unowned(partitions: Int) {
        Gauge(label: "pipeline_partitions_unowned", dimensions: [("stage", stage)]).record(partitions)
    }

    func retrying(partitions: Int) {
        Gauge(label: "pipeline_partitions_retrying", dimensions: [("stage", stage)]).record(partitions)
    }
}
