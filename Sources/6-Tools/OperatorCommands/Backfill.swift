import AppStore
import AppStoreServerAPI
import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import RecoveryJobs
import StageRuntime

/// `appstorectl backfill`: Apple's notification history for a window, fed to the raw topic.
struct Backfill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Feed Apple's notification history for a time window into the raw topic, as ingest would.",
        discussion: """
            Pages Get Notification History for --since … --until (Apple keeps 180 days of Production history, 30 of Sandbox) and writes each \
            notification's signedPayload to the raw topic with source notification-history. Verify checks it \
            again; grant ignores notifications it already applied, so overlapping windows are harmless. \
            API from \(RecoveryEnvironment.apiVariables); broker from \(RecoveryEnvironment.brokerVariables); \
            RAW_TOPIC overrides the topic. Exit status: 0 when written, 1 on failure, 2 on bad usage.
            """)

    @OptionGroup var app: AppOptions

    @Option(help: "Start of the window: \(RecoveryEnvironment.timeSyntax).")
    var since: String

    @Option(help: "End of the window (default: now): \(RecoveryEnvironment.timeSyntax).")
    var until: String?

    @Flag(help: "Only notifications Apple failed to deliver.")
    var onlyFailures = false

    @Flag(help: "Print the result as one JSON object (app, environment, since, until, onlyFailures, topic, fetched, written, undelivered, byType).")
    var json = false

    /// `backfill --json`.
    struct Output: OperatorJSONObject {
        var app: String
        var environment: String
        var since: Date
        var until: Date
        var onlyFailures: Bool
        var topic: String
        var fetched: Int
        var written: Int
        var undelivered: Int
        var byType: [String: Int]
    }

    func validate() throws {
        guard OperatorTime.parse(since) != nil else { throw ValidationError("--since must be \(RecoveryEnvironment.timeSyntax) (got \(since))") }
        if let until, OperatorTime.parse(until) == nil {
            throw ValidationError("--until must be \(RecoveryEnvironment.timeSyntax) (got \(until))")
        }
    }

    func run() async throws {
        do {
            let configuration = try RecoveryEnvironment.apiSettings()
            let target = try RecoveryEnvironment.target(app: app.app, environment: app.environment, configuration: configuration)
            let producer = try RecoveryEnvironment.producer()
            let topic = ProcessInfo.processInfo.environment["RAW_TOPIC"] ?? Topics.raw
            let job = NotificationBackfill(client: try RecoveryEnvironment.apiClient(configuration), producer: producer, rawTopic: topic)
            let start = OperatorTime.parse(since) ?? Date()
            let end = until.flatMap { OperatorTime.parse($0) } ?? Date()
            if !json {
                print(
                    "backfill \(target) \(Timestamp.iso8601(start)) … \(Timestamp.iso8601(end))\(onlyFailures ? " (only failures)" : "") → \(topic)")
            }
            let report = try await job.run(target: target, since: start, until: end, onlyFailures: onlyFailures)
            await producer.close()
            if json {
                OperatorEnvironment.printJSON(
                    Output(
                        app: target.bundleId, environment: target.environment.rawValue, since: start, until: end, onlyFailures: onlyFailures,
                        topic: topic, fetched: report.fetched, written: report.written, undelivered: report.undelivered, byType: report.byType))
                return
            }
            for (type, count) in report.byType.sorted(by: { $0.key < $1.key }) { print("  \(type.padded(44)) \(count)") }
            print(
                "\(report.fetched) notification(s) in Apple's history, \(report.undelivered) never delivered; \(report.written) written to \(topic)")
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
