import AppStore
import EntitlementStore
import Foundation
import GrantDecision
import GrantService
import GrantTestSupport
import GrantWorkload
import KafkaClient
import Logging
import Metrics
import PipelineRecords
import PostgresNIO
import Prometheus
import ServiceLifecycle
import StageRuntime
import TestSupport
import Testing

/// One Prometheus sample: name, labels, value.
struct Sample: Hashable {
    var name: String
    var labels: [String: String]
    var value: Double
}

/// The samples of a registry's text exposition (enough of the format for these tests).
func samples(_ registry: PrometheusCollectorRegistry) -> [Sample] {
    var bytes: [UInt8] = []
    registry.emit(into: &bytes)
    return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line -> Sample? in
        guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        let head = line[..<space]
        guard let brace = head.firstIndex(of: "{") else { return Sample(name: String(head), labels: [:], value: value) }
        var labels: [String: String] = [:]
        for match in head[brace...].matches(of: /([a-zA-Z_]+)="([^"]*)"/) { labels[String(match.1)] = String(match.2) }
        return Sample(name: String(head[..<brace]), labels: labels, value: value)
    }
}

extension [Sample] {
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        first { $0.name == name && $0.labels == labels }?.value
    }
}

@Suite("grant's metrics", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct GrantMetricsTests {
    /// The enriched records as the stage receives them, received by ingest `age` ago.
    func messages(_ records: [EnrichedRecord], age: TimeInterval) throws -> [KafkaMessage] {
        let ingestedAt = Timestamp.iso8601(Date().addingTimeInterval(-age))
        return try records.enumerated().map { i, record in
            KafkaMessage(
                topic: Topics.enriched, partition: 0, offset: Int64(i), key: Array("k".utf8), value: try record.encoded(),
                headers: [KafkaHeader(key: PipelineHeader.ingestedAt, string: ingestedAt)], timestamp: nil)
        }
    }

    @Test("renewal_extension_results_total counts a mass extension's RENEWAL_EXTENSION/SUMMARY by result, once however often it arrives")
    func massExtensionResults() async throws {
        let registry = PrometheusCollectorRegistry()
        let uuid = UUID().uuidString.lowercased()
        let summary = Summary(
            environment: .sandbox, appAppleId: 1, bundleId: "com.example.app", productId: "com.example.app.streaming",
            requestIdentifier: UUID().uuidString.lowercased(), succeededCount: 5, failedCount: 2)
        let record = EnrichedRecord(
            verified: VerifiedRecord(
                kind: .notification, source: "apple-webhook", environment: .sandbox, bundleId: "com.example.app", notificationUUID: uuid,
                notification: ResponseBodyV2DecodedPayload(
                    notificationType: .renewalExtension, subtype: .summary, notificationUUID: uuid, summary: summary, version: "2.0",
                    signedDate: Date()),
                signedPayload: "h.p.s", verifiedAt: Date()),
            enrichment: Enrichment(lookup: .none, fetchedAt: Date()))
        try await withMetricsFactory(ProcessBootstrap.metricsFactory(registry: registry)) {
            try await ScratchDatabase.with { db in
                for _ in 0..<2 {
                    let results = try await db.store.apply([try GrantEvent(record)], policy: GrantPolicy())
                    #expect(results.allSatisfy { (try? $0.get()) != nil })
                }
                let found = samples(registry)
                #expect(found.value("renewal_extension_results_total", ["result": "succeeded"]) == 5)
                #expect(found.value("renewal_extension_results_total", ["result": "failed"]) == 2)
            }
        }
    }

    @Test("notifications_total counts every committed event by type, subtype and outcome; the latency histogram times them from ingest")
    func notificationsAndLatency() async throws {
        let registry = PrometheusCollectorRegistry()
        let records = LifecycleGenerator(seed: 5).stream(customers: 4)
        try #require(records.count > 10)
        let environment = records[0].verified.environment.rawValue
        try await withMetricsFactory(ProcessBootstrap.metricsFactory(registry: registry)) {
            try await ScratchDatabase.with { db in
                try await db.store.syncProducts(LifecycleGenerator.catalog)
                let stage = GrantStage(store: db.store, policy: generatorPolicy, logger: ScratchDatabase.logger)
                let first = try await stage.process(batch: try messages(records, age: 2))
                #expect(first.allSatisfy { (try? $0.get()) != nil })

                // What the notifications table says, by type, subtype and outcome.
                var recorded: [[String: String]: Double] = [:]
                let rows = try await db.client.query(
                    "SELECT notification_type, coalesce(subtype, ''), outcome, count(*) FROM notifications GROUP BY 1, 2, 3",
                    logger: ScratchDatabase.logger)
                for try await (type, subtype, outcome, count) in rows.decode((String, String, String, Int64).self) {
                    recorded[["type": type, "subtype": subtype, "outcome": outcome]] = Double(count)
                }
                #expect(recorded.keys.contains { $0["outcome"] == "applied" })
                #expect(recorded.keys.contains { $0["subtype"] != "" })
                let afterFirst = samples(registry)
                let counted = afterFirst.filter { $0.name == "notifications_total" }
                for (labels, count) in recorded {
                    #expect(afterFirst.value("notifications_total", labels) == count, "notifications_total\(labels)")
                }
                let recordedTotal = recorded.values.reduce(0, +)
                let duplicatesInStream = counted.filter { $0.labels["outcome"] == "duplicate" }.map(\.value).reduce(0, +)
                #expect(counted.map(\.value).reduce(0, +) == Double(records.count), "each event counted once")
                #expect(recordedTotal + duplicatesInStream == Double(records.count))

                // Timed from the ingested-at header (2 s ago) to the commit: every recorded event.
                let latency = ["environment": environment]
                #expect(afterFirst.value("entitlement_latency_seconds_count", latency) == recordedTotal)
                let buckets = afterFirst.filter { $0.name == "entitlement_latency_seconds_bucket" && $0.labels["environment"] == environment }
                func bucket(_ le: Double) -> Double? { buckets.first { Double($0.labels["le"] ?? "") == le }?.value }
                // At least the 2 s since the header, so nothing in the buckets below; how far above
                // depends on the machine's load, so only that every event is in the last bucket.
                #expect(bucket(0.01) == 0 && bucket(1) == 0)
                #expect(bucket(.infinity) == recordedTotal, "every recorded event is in the histogram")
                let sum = try #require(afterFirst.value("entitlement_latency_seconds_sum", latency))
                #expect(sum >= 2 * recordedTotal)

                // Delivered again (a redelivery after a crash): every event is a duplicate, and not timed.
                _ = try await stage.process(batch: try messages(records, age: 30))
                let afterSecond = samples(registry)
                for (labels, count) in recorded {
                    var duplicate = labels
                    duplicate["outcome"] = "duplicate"
                    let before = afterFirst.value("notifications_total", duplicate) ?? 0
                    #expect((afterSecond.value("notifications_total", duplicate) ?? 0) - before >= count)
                    #expect(afterSecond.value("notifications_total", labels) == count, "applied events are not counted again")
                }
                #expect(afterSecond.filter { $0.name == "notifications_total" }.map(\.value).reduce(0, +) == Double(2 * records.count))
                #expect(afterSecond.value("entitlement_latency_seconds_count", latency) == recordedTotal)
            }
        }
    }

    @Test("the outbox gauges show the backlog, and 0 once the publisher has published it", .enabled(if: TestServices.brokerEnabled))
    func outboxGauges() async throws {
        let registry = PrometheusCollectorRegistry()
        let changes = try await TestServices.makeTopic("metrics-changes")
        try await withMetricsFactory(ProcessBootstrap.metricsFactory(registry: registry)) {
            try await ScratchDatabase.with { db in
                try await db.store.syncProducts(LifecycleGenerator.catalog)
                try await applyAll(LifecycleGenerator(seed: 6).stream(customers: 3), db.store, policy: generatorPolicy)
                let rows = try await db.count("SELECT count(*) FROM outbox WHERE published_at IS NULL")
                try #require(rows > 0)
                try await Task.sleep(for: .milliseconds(1100))
                let backlog = try await db.store.outboxBacklog()
                #expect(backlog.unpublishedRows == rows)
                #expect(backlog.oldestAgeSeconds >= 1 && backlog.oldestAgeSeconds < 120)
                GrantMetrics.outbox(backlog)
                #expect(samples(registry).value("outbox_unpublished_rows") == Double(rows))

                let producer = try KafkaProducer(configuration: TestServices.producerConfiguration(), logger: ScratchDatabase.logger)
                let publisher = OutboxPublisher(
                    store: db.store, producer: producer, topic: changes, pollInterval: .milliseconds(100), batchSize: 500,
                    logger: ScratchDatabase.logger)
                let group = ServiceGroup(services: [producer, publisher], logger: ScratchDatabase.logger)
                let task = Task { try await group.run() }
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    let now = samples(registry)
                    if publisher.publishedCount == rows, now.value("outbox_unpublished_rows") == 0 { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                await group.triggerGracefulShutdown()
                try await task.value
                let after = samples(registry)
                #expect(publisher.publishedCount == rows)
                #expect(after.value("outbox_unpublished_rows") == 0)
                #expect(after.value("outbox_oldest_unpublished_age_seconds") == 0)
                #expect(try await db.count("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0)
            }
        }
    }

    @Test("the consumption gauges show the requests still to answer and the time to the earliest deadline")
    func consumptionGauges() async throws {
        let registry = PrometheusCollectorRegistry()
        try await withMetricsFactory(ProcessBootstrap.metricsFactory(registry: registry)) {
            try await ScratchDatabase.with { db in
                let empty = try await db.store.consumptionBacklog()
                #expect(empty == PendingConsumptionRequests(pending: 0, earliestDeadline: nil))
                GrantMetrics.consumption(empty)
                #expect(samples(registry).value("consumption_requests_pending") == 0)
                #expect(samples(registry).value("consumption_request_deadline_seconds") == GrantMetrics.noDeadlineSeconds)

                let now = Date()
                try await db.client.query(
                    """
                    INSERT INTO consumption_requests (environment, notification_uuid, transaction_id, deadline, status) VALUES
                    ('Sandbox', 'a', '1', \(now.addingTimeInterval(3600)), 'pending'),
                    ('Sandbox', 'b', '2', \(now.addingTimeInterval(7200)), 'pending'),
                    ('Sandbox', 'c', '3', \(now.addingTimeInterval(60)), 'sent')
                    """, logger: ScratchDatabase.logger)
                let backlog = try await db.store.consumptionBacklog()
                #expect(backlog.pending == 2)
                GrantMetrics.consumption(backlog, now: now)
                #expect(samples(registry).value("consumption_requests_pending") == 2)
                let seconds = try #require(samples(registry).value("consumption_request_deadline_seconds"))
                #expect(abs(seconds - 3600) < 1)
            }
        }
    }
}
