import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords

/// How a TEST notification travelled.
public struct TestNotificationTrace: Sendable, Hashable, OperatorJSONObject {
    public var token: String
    public var notificationUUID: String?
    /// Apple's delivery attempts as last polled (`SUCCESS`, `TIMED_OUT`, …).
    public var sendAttempts: [String]
    /// Where it was found on the verified topic (`partition/offset`), when it arrived.
    public var verifiedAt: String?
    public var arrived: Bool { verifiedAt != nil }
}

/// `appstorectl test-notification`: asks Apple for a TEST notification, polls its status, and
/// follows it to the verified topic (ingest → verify), proving the webhook path end to end.
public struct TestNotificationJob: Sendable {
    public let client: AppStoreServerAPIClient
    public let broker: KafkaClientConfiguration
    public let verifiedTopic: String

    public init(client: AppStoreServerAPIClient, broker: KafkaClientConfiguration, verifiedTopic: String = Topics.verified) {
        self.client = client
        self.broker = broker
        self.verifiedTopic = verifiedTopic
    }

    /// Requests, then polls until the record with the notification's UUID is on the verified topic or
    /// `timeout` passes (the trace then says how far it got).
    public func run(
        target: AppStoreServerAPIClient.Target, timeout: Duration, progress: @Sendable (String) -> Void = { _ in }
    ) async throws
        -> TestNotificationTrace
    {
        let started = Date().addingTimeInterval(-5)
        let deadline = ContinuousClock.now + timeout
        let offsets = KafkaGroupOffsets(configuration: broker)
        let partitions = try await offsets.partitions(of: verifiedTopic)
        let byTime = try await offsets.offsets(at: started, for: partitions)
        let marks = try await offsets.watermarks(partitions)
        // From the first record written since shortly before the request; the end when there is none.
        let start: [KafkaTopicPartition: Int64?] = Dictionary(
            uniqueKeysWithValues: partitions.map { partition in
                (partition, (byTime[partition] ?? nil) ?? marks[partition]?.high)
            })
        let token: String
        do {
            token = try await client.requestTestNotification(target: target)
        } catch {
            throw OperationsError.api(error)
        }
        progress("requested: token \(token)")
        var trace = TestNotificationTrace(token: token, sendAttempts: [])
        let scanner = KafkaTopicScanner(configuration: broker, idle: .milliseconds(500))
        while ContinuousClock.now < deadline {
            if let status = try? await client.testNotificationStatus(token: token, target: target) {
                let attempts = status.sendAttempts.compactMap(\.sendAttemptResult)
                if trace.notificationUUID == nil { progress("notification \(status.notification.payload.notificationUUID ?? "?")") }
                if attempts != trace.sendAttempts { progress("Apple's send attempts: \(attempts.joined(separator: ", "))") }
                trace.notificationUUID = status.notification.payload.notificationUUID
                trace.sendAttempts = attempts
            }
            if let uuid = trace.notificationUUID {
                for message in try await scanner.scan(start) {
                    guard let record = try? VerifiedRecord.decode(message.value), record.notificationUUID == uuid else { continue }
                    trace.verifiedAt = "\(message.partition)/\(message.offset)"
                    progress("on \(verifiedTopic) at \(message.partition)/\(message.offset)")
                    // Ingest answered before verify wrote this, so Apple's record of the delivery is final.
                    if let status = try? await client.testNotificationStatus(token: token, target: target) {
                        trace.sendAttempts = status.sendAttempts.compactMap(\.sendAttemptResult)
                    }
                    return trace
                }
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        return trace
    }
}
