import KafkaClient
import PipelineRecords
import TestSupport

extension PipelineUnderTest {
    /// What ``validateRecords()`` read and found.
    struct SchemaReport {
        /// Records read per catalogue topic that has a schema.
        var counts: [String: Int] = [:]
        /// Each record that does not validate, or whose `schema` header does not name its topic.
        var problems: [String] = []
    }

    /// Every record the run produced on a topic with a JSON Schema in `schemas/topics.json` (raw,
    /// verified, enriched and the change events; the dead-letter topics carry the failed record
    /// unchanged and have none), read from the beginning and validated against that schema; each
    /// record's `schema` header must name the topic too.
    func validateRecords() async throws -> SchemaReport {
        let client = TestServices.clientConfiguration("e2e-schemas")
        var report = SchemaReport()
        for topic in Topics.catalogue.map(\.name).sorted() {
            guard let schema = try SchemaValidator.schema(ofTopic: topic) else { continue }
            guard let name = topics[topic] else { throw TestSupportError("the run has no topic for \(topic)") }
            let partitions = try await KafkaGroupOffsets(configuration: client).partitions(of: name)
            let records = try await KafkaTopicScanner(configuration: client).scan(
                Dictionary(uniqueKeysWithValues: partitions.map { ($0, Int64?.none) }))
            report.counts[topic] = records.count
            let errors = try await SchemaValidator.errors(of: records.map(\.value), schema: schema)
            report.problems += errors.prefix(20).map { "\(topic) record \($0)" }
            if errors.count > 20 { report.problems.append("\(topic): \(errors.count - 20) more schema errors") }
            for record in records where record.headers.string(PipelineHeader.schema) != topic {
                report.problems.append(
                    "\(topic) partition \(record.partition) offset \(record.offset): schema header \(record.headers.string(PipelineHeader.schema) ?? "none")"
                )
            }
        }
        return report
    }
}
