import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import RecoveryJobs
import StageRuntime

/// `appstorectl reconcile`: the safety net for notifications Apple never delivered.
struct Reconcile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask enrich to fetch the truth of subscriptions whose expiry plus leeway passed with no newer event.",
        discussion: """
            Reads grant's subscriptions (running: active, grace period, billing retry) whose end plus \
            --leeway-seconds is past and about which no event was signed since that end. For each, fetches the \
            latest transaction from the API (verified) and publishes it to the verified topic (source reconcile, \
            keyed <environment>:<originalTransactionId>); enrich looks up the purchase's history and status and \
            grant applies them. Database from \(RecoveryEnvironment.databaseVariables); API from \
            \(RecoveryEnvironment.apiVariables); broker from \(RecoveryEnvironment.brokerVariables); VERIFIED_TOPIC \
            overrides the topic. Exit status: 0 when every overdue subscription was queued, 1 otherwise, 2 on bad usage.
            """)

    @Option(help: "Only subscriptions of this bundle ID.")
    var app: String?

    @Option(help: "Seconds past the end before a subscription counts as overdue (Apple renews up to a day early; notifications can lag).")
    var leewaySeconds: Int = 3600

    @Flag(help: "List the overdue subscriptions without calling Apple or publishing.")
    var dryRun = false

    @Flag(help: "Print the result as one JSON object (dryRun, leewaySeconds, overdue, items, queued, failed).")
    var json = false

    /// `reconcile --json`.
    struct Output: OperatorJSONObject {
        var dryRun: Bool
        var leewaySeconds: Int
        var overdue: [OverdueSubscription]
        /// What happened to each (empty in a dry run).
        var items: [ReconcileItem]
        var queued: Int
        var failed: Int
    }

    func validate() throws {
        guard leewaySeconds >= 0 else { throw ValidationError("--leeway-seconds must not be negative") }
    }

    func run() async throws {
        do {
            let leeway = Duration.seconds(leewaySeconds)
            let app = self.app
            let overdue = try await RecoveryEnvironment.withDatabase { database in
                try await SubscriptionReconciler(database: database, logger: OperatorEnvironment.logger).overdue(bundleId: app, leeway: leeway)
            }
            func finish(_ items: [ReconcileItem]) {
                guard json else { return }
                let failed = items.filter { $0.failure != nil }.count
                OperatorEnvironment.printJSON(
                    Output(
                        dryRun: dryRun, leewaySeconds: leewaySeconds, overdue: overdue, items: items, queued: items.count - failed, failed: failed))
            }
            if !json {
                print("environment".padded(12) + "originalTransactionId".padded(24) + "product".padded(36) + "lifecycle".padded(16) + "ended")
                for s in overdue {
                    print(
                        s.environment.padded(12) + s.originalTransactionId.padded(24) + s.productId.padded(36) + s.lifecycle.padded(16)
                            + Timestamp.iso8601(s.endsAt))
                }
                print("\(overdue.count) overdue subscription(s)")
            }
            if dryRun || overdue.isEmpty {
                if dryRun, !json { print("dry run: nothing queued") }
                finish([])
                return
            }
            let configuration = try RecoveryEnvironment.apiSettings()
            let client = try RecoveryEnvironment.apiClient(configuration)
            let producer = try RecoveryEnvironment.producer()
            let topic = ProcessInfo.processInfo.environment["VERIFIED_TOPIC"] ?? Topics.verified
            let items = await SubscriptionReconciler.queue(
                overdue, client: client, producer: producer, verifiedTopic: topic, defaultBundleId: app)
            await producer.close()
            finish(items)
            for item in items where !json {
                if let failure = item.failure {
                    print("failed \(item.subscription.originalTransactionId): \(failure)")
                } else {
                    print("queued \(item.key ?? "?") (latest transaction \(item.transactionId ?? "?")) → \(topic)")
                }
            }
            let failed = items.filter { $0.failure != nil }.count
            if !json { print("\(items.count - failed) queued, \(failed) failed") }
            if failed > 0 { throw OperationsError(.reconcileIncomplete, "\(failed) subscription(s) could not be queued") }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
