import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import PipelineMessages
import PipelineOperations
import PipelineRecords

/// What a backfill found and wrote.
public struct BackfillReport: Sendable, Hashable, OperatorJSONObject {
    /// Notifications Apple's history returned for the window.
    public var fetched: Int
    /// Records written to the raw topic (one per notification).
    public var written: Int
    /// Of those, how many Apple never delivered successfully (last send attempt not `SUCCESS`).
    public var undelivered: Int
    /// Notifications per type (`DID_RENEW`, `SUBSCRIBED/INITIAL_BUY`, …).
    public var byType: [String: Int]
}

/// `appstorectl backfill`: pages Apple's Get Notification History for a window and writes every
/// notification's `signedPayload` to the raw topic as ingest would, with `source: notification-history`.
///
/// Verify checks each payload again, and grant deduplicates by notification UUID, so writing a
/// notification the webhook already delivered is harmless.
public struct NotificationBackfill: Sendable {
    public let client: AppStoreServerAPIClient
    public let producer: KafkaProducer
    public let rawTopic: String

    public init(client: AppStoreServerAPIClient, producer: KafkaProducer, rawTopic: String = Topics.raw) {
        self.client = client
        self.producer = producer
        self.rawTopic = rawTopic
    }

    /// Fetches the window's history (every page, every JWS verified) and writes it to the raw topic.
    /// - Parameter onlyFailures: Only notifications Apple failed to deliver (Apple's `onlyFailures`).
    public func run(
        target: AppStoreServerAPIClient.Target, since: Date, until: Date, onlyFailures: Bool
    ) async throws -> BackfillReport {
        guard since < until else {
            throw OperationsError(.invalidWindow, "--since (\(Timestamp.iso8601(since))) must be before --until (\(Timestamp.iso8601(until)))")
        }
        let request = NotificationHistoryRequest(startDate: since, endDate: until, onlyFailures: onlyFailures ? true : nil)
        let entries: [NotificationHistoryEntry]
        do {
            entries = try await client.notificationHistory(request, target: target)
        } catch {
            throw OperationsError.api(error)
        }
        let now = Date()
        let messages = entries.map {
            RawMessage.make(
                body: RawRecord.notificationBody(signedPayload: $0.signedPayload), topic: rawTopic,
                source: PipelineHeader.Source.notificationHistory, ingestedAt: now)
        }
        do {
            _ = try await producer.sendAll(messages)
        } catch {
            throw OperationsError(.brokerUnavailable, "writing to \(rawTopic) failed: \(error)")
        }
        var byType: [String: Int] = [:]
        var undelivered = 0
        for entry in entries {
            let payload = entry.notification.payload
            let type = (payload.notificationType?.rawValue ?? "?") + (payload.subtype.map { "/\($0.rawValue)" } ?? "")
            byType[type, default: 0] += 1
            if entry.sendAttempts.last?.sendAttemptResult != "SUCCESS" { undelivered += 1 }
        }
        return BackfillReport(fetched: entries.count, written: messages.count, undelivered: undelivered, byType: byType)
    }
}
