import ArgumentParser
import Foundation
import PipelineOperations
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

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be 1 to 3600 seconds") }
    }

    func run() async throws {
        do {
            let configuration = try RecoveryEnvironment.enrichConfiguration()
            let target = try RecoveryEnvironment.target(app: app.app, environment: app.environment, configuration: configuration)
            let topic = ProcessInfo.processInfo.environment["VERIFIED_TOPIC"] ?? Topics.verified
            let job = TestNotificationJob(
                client: try RecoveryEnvironment.apiClient(configuration), broker: try OperatorEnvironment.kafkaClient(), verifiedTopic: topic)
            let trace = try await job.run(target: target, timeout: .seconds(timeout)) { print($0) }
            guard trace.arrived else {
                throw OperationsError(
                    "not_arrived",
                    "TEST notification \(trace.notificationUUID ?? "(status unknown)") did not reach \(topic) within \(timeout) s; "
                        + "Apple's send attempts: \(trace.sendAttempts.isEmpty ? "none" : trace.sendAttempts.joined(separator: ", "))")
            }
            print("arrived: \(trace.notificationUUID ?? "?") at \(topic) \(trace.verifiedAt ?? ""); Apple's send attempts: "
                + (trace.sendAttempts.isEmpty ? "none recorded" : trace.sendAttempts.joined(separator: ", ")))
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
