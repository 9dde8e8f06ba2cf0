import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import RecoveryJobs
import StageRuntime

/// `appstorectl refunds`: the safety net for refunds whose notification never arrived.
struct Refunds: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask Apple for each customer's refunds since the last sweep and feed those grant does not know.",
        discussion: """
            For every customer owning a purchase (or a delivered consumable), pages Get Refund History v2 from \
            the revision the previous sweep kept (refund_sweeps), so Apple lists only refunds made since. A refunded \
            transaction grant does not hold as refunded is published to the verified topic (source refund-history, \
            keyed <environment>:<originalTransactionId>); enrich and grant apply it like Apple's REFUND notification. \
            A customer's revision is kept only once everything Apple listed was fed. Database from \
            \(RecoveryEnvironment.databaseVariables); API from \(RecoveryEnvironment.apiVariables); broker from \
            \(RecoveryEnvironment.brokerVariables); VERIFIED_TOPIC overrides the topic. Exit status: 0 when every \
            customer was swept, 1 otherwise, 2 on bad usage.
            """)

    @Option(help: "Only customers of this bundle ID.")
    var app: String?

    @Option(help: "Only customers with a purchase made since: \(RecoveryEnvironment.timeSyntax).")
    var since: String?

    @Flag(help: "Ask Apple and list what it answers, without publishing or keeping revisions.")
    var dryRun = false

    @Flag(help: "Print the result as one JSON object (dryRun, customers, items, listed, fed, failed).")
    var json = false

    /// `refunds --json`.
    struct Output: OperatorJSONObject {
        var dryRun: Bool
        var customers: Int
        var items: [RefundSweepItem]
        /// Refunded transactions Apple listed, and those fed to the pipeline.
        var listed: Int
        var fed: Int
        var failed: Int
    }

    func validate() throws {
        if let since, OperatorTime.parse(since) == nil {
            throw ValidationError("--since must be \(RecoveryEnvironment.timeSyntax) (got \(since))")
        }
    }

    func run() async throws {
        do {
            let app = self.app
            let start = since.flatMap { OperatorTime.parse($0) }
            let configuration = try RecoveryEnvironment.apiSettings()
            let client = try RecoveryEnvironment.apiClient(configuration)
            let producer = dryRun ? nil : try RecoveryEnvironment.producer()
            let topic = ProcessInfo.processInfo.environment["VERIFIED_TOPIC"] ?? Topics.verified
            let items = try await RecoveryEnvironment.withDatabase { database in
                let sweep = RefundSweep(database: database, logger: OperatorEnvironment.logger)
                let customers = try await sweep.customers(bundleId: app, since: start)
                return await sweep.sweep(customers, client: client, producer: producer, verifiedTopic: topic)
            }
            await producer?.close()
            let failed = items.filter { $0.failure != nil }.count
            let listed = items.map(\.listed).reduce(0, +)
            let fed = items.map(\.fed.count).reduce(0, +)
            if json {
                OperatorEnvironment.printJSON(
                    Output(dryRun: dryRun, customers: items.count, items: items, listed: listed, fed: fed, failed: failed))
            } else {
                print("environment".padded(12) + "customer".padded(38) + "pages".padded(7) + "listed".padded(8) + "fed")
                for item in items {
                    let c = item.customer
                    print(
                        c.environment.padded(12) + c.customerId.padded(38) + String(item.pages).padded(7) + String(item.listed).padded(8)
                            + (item.failure.map { "failed: \($0)" } ?? (item.fed.isEmpty ? "-" : item.fed.joined(separator: " "))))
                }
                print(
                    "\(items.count) customer(s) swept: \(listed) refund(s) listed, \(fed) fed → \(dryRun ? "nothing (dry run)" : topic), \(failed) failed"
                )
            }
            if failed > 0 { throw OperationsError(.refundSweepIncomplete, "\(failed) customer(s) could not be swept") }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
