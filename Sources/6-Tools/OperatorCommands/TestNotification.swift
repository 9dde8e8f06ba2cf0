import AppStore
import AppStoreServerAPI
import ArgumentParser
import Foundation
import PipelineOperations
import PipelineRecords
import RecoveryJobs
import StageRuntime

/// `appstorectl test-notification`: proves Apple → webhook → ingest → verify works.
struct TestNotification: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-notification",
        abstract: "Ask Apple for a TEST notification and follow it to the verified topic.",
        discussion: """
            Calls Request a Test Notification, polls Get Test Notification Status (Apple's send attempts) and scans \
            the verified topic for the record with the notification's UUID. API from \(RecoveryEnvironment.apiVariables); \
            broker from \(RecoveryEnvironment.brokerVariables); VERIFIED_TOPIC overrides the topic. Exit status: 0 when \
            it arrived, 1 when it did not within --timeout (the output says how far it got), 2 on bad usage.
            """)

    @OptionGroup var app: AppOptions

    @Option(help: "Seconds to wait for the notification on the verified topic.")
    var timeout: Int = 60

    @Flag(help: "Print the trace as one JSON object (app, environment, topic, token, notificationUUID, sendAttempts, verifiedAt, arrived).")
    var json = false

    /// `test-notification --json`.
    struct Output: OperatorJSONObject {
        var app: String
        var environment: String
        var topic: String
        var token: String
        var notificationUUID: String?
        var sendAttempts: [String]
        /// `partition/offset` on the verified topic, when it arrived.
        var verifiedAt: String?
        var arrived: Bool
    }

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be 1 to 3600 seconds") }
    }

    func run() async throws {
        do {
            let configuration = try RecoveryEnvironment.apiSettings()
            let target = try RecoveryEnvironment.target(app: app.app, environment: app.environment, configuration: configuration)
            let topic = ProcessInfo.processInfo.environment["VERIFIED_TOPIC"] ?? Topics.verified
            let job = TestNotificationJob(
                client: try RecoveryEnvironment.apiClient(configuration), broker: try OperatorEnvironment.kafkaClient(), verifiedTopic: topic)
            let json = self.json
            let trace = try await job.run(target: target, timeout: .seconds(timeout)) { if !json { print($0) } }
            if json {
                OperatorEnvironment.printJSON(
                    Output(
                        app: target.bundleId, environment: target.environment.rawValue, topic: topic, token: trace.token,
                        notificationUUID: trace.notificationUUID, sendAttempts: trace.sendAttempts, verifiedAt: trace.verifiedAt,
                        arrived: trace.arrived))
                if !trace.arrived { throw ExitCode(1) }
                return
            }
            guard trace.arrived else {
                throw OperationsError(
                    .notArrived,
                    "TEST notification \(trace.notificationUUID ?? "(status unknown)") did not reach \(topic) within \(timeout) s; "
                        + "Apple's send attempts: \(trace.sendAttempts.isEmpty ? "none" : trace.sendAttempts.joined(separator: ", "))")
            }
            print(
                "arrived: \(trace.notificationUUID ?? "?") at \(topic) \(trace.verifiedAt ?? ""); Apple's send attempts: "
                    + (trace.sendAttempts.isEmpty ? "none recorded" : trace.sendAttempts.joined(separator: ", ")))
        } catch let error as ValidationError {
            throw error
        } catch let exit as ExitCode {
            throw exit
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
