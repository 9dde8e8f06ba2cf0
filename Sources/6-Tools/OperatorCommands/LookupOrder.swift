import AppStore
import AppStoreServerAPI
import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import RecoveryJobs
import StageRuntime

/// `appstorectl lookup-order`: the purchase behind an order ID from a customer's receipt e-mail.
struct LookupOrder: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup-order",
        abstract: "Find the transactions behind an order ID, show the customer and entitlements, optionally feed them.",
        discussion: """
            Calls Look Up Order ID (Apple answers in Production only; the simulator in Sandbox), verifies every \
            transaction, and prints them with the customer (appAccountToken) and what grant holds for that \
            customer (skipped with a note when the database cannot be reached). --feed publishes each transaction \
            to the verified topic (source reconcile) so enrich and grant process it. API from \
            \(RecoveryEnvironment.apiVariables); database from \(RecoveryEnvironment.databaseVariables); broker from \
            \(RecoveryEnvironment.brokerVariables). Exit status: 0 when found, 1 when unknown or failed, 2 on bad usage.
            """)

    @Argument(help: "The order ID from the customer's receipt e-mail.")
    var orderID: String

    @OptionGroup var app: AppOptions

    @Flag(help: "Publish the transactions to the verified topic so the pipeline processes them.")
    var feed = false

    @Flag(help: "Print the result as one JSON object (orderId, app, environment, transactions, customers, customerErrors, fed).")
    var json = false

    func validate() throws {
        guard !orderID.isEmpty, orderID.utf8.count <= 64 else { throw ValidationError("ORDER_ID must be 1 to 64 characters") }
    }

    /// `lookup-order --json`.
    struct Output: OperatorJSONObject {
        struct Transaction: OperatorJSONObject {
            var transactionId: String?
            var originalTransactionId: String?
            var productId: String?
            var type: String?
            var purchaseDate: Date?
            var expiresDate: Date?
            var revocationDate: Date?
            var appAccountToken: String?
        }
        var orderId: String
        var app: String
        var environment: String
        var transactions: [Transaction]
        /// What grant holds for each customer the transactions name.
        var customers: [CustomerReport]
        /// Customers whose report could not be read (database unreachable), with why.
        var customerErrors: [String: String]
        /// The verified records' keys with --feed; `null` without.
        var fed: [String]?
    }

    func run() async throws {
        do {
            let configuration = try RecoveryEnvironment.apiSettings()
            let target = try RecoveryEnvironment.target(app: app.app, environment: app.environment, configuration: configuration)
            let job = OrderLookupJob(client: try RecoveryEnvironment.apiClient(configuration))
            let result = try await job.lookUp(orderID, target: target)
            var output = Output(
                orderId: orderID, app: target.bundleId, environment: target.environment.rawValue,
                transactions: result.transactions.map {
                    .init(
                        transactionId: $0.transactionId, originalTransactionId: $0.originalTransactionId, productId: $0.productId,
                        type: $0.type?.rawValue, purchaseDate: $0.purchaseDate, expiresDate: $0.expiresDate, revocationDate: $0.revocationDate,
                        appAccountToken: $0.appAccountToken?.uuidString.lowercased())
                },
                customers: [], customerErrors: [:])
            if !json {
                print("order \(orderID) (\(target)): \(result.transactions.count) transaction(s)")
                for t in result.transactions {
                    print(
                        "  " + (t.transactionId ?? "?").padded(20) + "original " + (t.originalTransactionId ?? "?").padded(20)
                            + (t.productId ?? "?").padded(36) + (t.type?.rawValue ?? "?").padded(30)
                            + "purchased " + (t.purchaseDate.map(Timestamp.iso8601) ?? "-")
                            + (t.expiresDate.map { "  expires " + Timestamp.iso8601($0) } ?? "")
                            + (t.revocationDate.map { "  REVOKED " + Timestamp.iso8601($0) } ?? "")
                            + "  customer " + (t.appAccountToken?.uuidString.lowercased() ?? "(no appAccountToken)"))
                }
            }
            let environment = target.environment.rawValue
            for customer in result.customers {
                do {
                    let report = try await RecoveryEnvironment.withDatabase { database in
                        try await CustomerReport.load(
                            customerID: customer, environment: environment, database: database, logger: OperatorEnvironment.logger)
                    }
                    output.customers.append(report)
                    if !json { print("\n" + report.text) }
                } catch {
                    output.customerErrors[customer.uuidString.lowercased()] = "\(error)"
                    if !json { print("\ncustomer \(customer.uuidString.lowercased()): entitlements unavailable (\(error))") }
                }
            }
            if result.customers.isEmpty, !json { print("no transaction names a customer (appAccountToken)") }
            if feed {
                let producer = try RecoveryEnvironment.producer()
                let topic = ProcessInfo.processInfo.environment["VERIFIED_TOPIC"] ?? Topics.verified
                let keys = try await job.feed(result, target: target, producer: producer, verifiedTopic: topic)
                await producer.close()
                output.fed = keys
                if !json {
                    print("")
                    for key in keys { print("fed \(key) → \(topic)") }
                    print("\(keys.count) transaction(s) fed to the pipeline")
                }
            }
            if json { OperatorEnvironment.printJSON(output) }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
