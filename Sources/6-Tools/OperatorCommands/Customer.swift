import AppStore
import ArgumentParser
import Foundation
import PipelineOperations
import RecoveryJobs

/// `appstorectl customer`: what grant stored about one customer, found by any of its identifiers.
struct Customer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "A customer's entitlements, purchases, transactions, balances, notifications, ownership claims, consumption requests and change history.",
        discussion: """
            Name the customer by its appAccountToken (CUSTOMER_ID, a UUID) or by exactly one of --transaction-id, \
            --original-transaction-id, --external-user-id (grant's tables: a purchase names its owner) or --order-id \
            (Apple's order ID from the receipt e-mail; grant stores no order IDs, so it is looked up with Apple's Look Up \
            Order ID: needs --app and the API settings \(RecoveryEnvironment.apiVariables)). Read-only queries over \
            grant's tables; database from \(RecoveryEnvironment.databaseVariables). Exit status: 0 when grant knows the \
            customer, 1 when it does not or a lookup fails, 2 on bad usage.
            """)

    @Argument(help: "The customer's ID (appAccountToken UUID).")
    var customerID: String?

    @Option(help: "Find the customer by a transaction ID (any transaction of a purchase).")
    var transactionId: String?

    @Option(help: "Find the customer by a purchase's originalTransactionId.")
    var originalTransactionId: String?

    @Option(help: "Find the customer by Apple's order ID (receipt e-mail), through the App Store Server API.")
    var orderId: String?

    @Option(help: "Find the customer by the product's own user ID (customers.external_user_id).")
    var externalUserId: String?

    @Option(help: "The app's bundle ID for --order-id (one of APPSTORE_APPS).")
    var app: String?

    @Option(help: "Only Sandbox or Production data.")
    var environment: String?

    @Flag(help: "Print {\"lookup\": …, \"customers\": [report, …]} as one JSON object (fields in deploy/README.md, Operations).")
    var json = false

    func validate() throws {
        let given = [customerID, transactionId, originalTransactionId, orderId, externalUserId].compactMap { $0 }
        guard given.count == 1 else {
            throw ValidationError(
                "name the customer by exactly one of CUSTOMER_ID, --transaction-id, --original-transaction-id, --order-id, --external-user-id")
        }
        if let customerID, UUID(uuidString: customerID) == nil { throw ValidationError("CUSTOMER_ID must be a UUID (got \(customerID))") }
        if given[0].isEmpty || given[0].utf8.count > 128 { throw ValidationError("the identifier must be 1 to 128 characters") }
        if orderId != nil, app == nil { throw ValidationError("--order-id needs --app (the bundle ID whose orders to look up)") }
        if let environment, AppListParser.environment(environment) == nil {
            throw ValidationError("--environment must be Sandbox or Production (got \(environment))")
        }
    }

    /// `customer --json`.
    struct Output: OperatorJSONObject {
        struct Lookup: OperatorJSONObject {
            /// `appAccountToken`, `transactionId`, `originalTransactionId`, `orderId` or `externalUserId`.
            var by: String
            var value: String
            var environment: String?
        }
        var lookup: Lookup
        var customers: [CustomerReport]
    }

    func run() async throws {
        do {
            let environment = self.environment.flatMap(AppListParser.environment)?.rawValue
            let lookup: Output.Lookup
            var identifiers: [CustomerIdentifier] = []
            var notes: [String] = []
            if let customerID, let id = UUID(uuidString: customerID) {
                lookup = .init(by: "appAccountToken", value: id.uuidString.lowercased(), environment: environment)
                identifiers = [.appAccountToken(id)]
            } else if let transactionId {
                lookup = .init(by: "transactionId", value: transactionId, environment: environment)
                identifiers = [.transactionId(transactionId)]
            } else if let originalTransactionId {
                lookup = .init(by: "originalTransactionId", value: originalTransactionId, environment: environment)
                identifiers = [.originalTransactionId(originalTransactionId)]
            } else if let externalUserId {
                lookup = .init(by: "externalUserId", value: externalUserId, environment: environment)
                identifiers = [.externalUserId(externalUserId)]
            } else if let orderId, let app {
                lookup = .init(by: "orderId", value: orderId, environment: environment)
                let configuration = try RecoveryEnvironment.apiSettings()
                let target = try RecoveryEnvironment.target(app: app, environment: self.environment, configuration: configuration)
                let result = try await OrderLookupJob(client: try RecoveryEnvironment.apiClient(configuration)).lookUp(orderId, target: target)
                notes.append("order \(orderId) (\(target)): transactions \(result.transactions.compactMap(\.transactionId).joined(separator: ", "))")
                // Grant's owner of each purchase first (the token Apple returns may be a refused claim's).
                for transaction in result.transactions {
                    if let original = transaction.originalTransactionId { identifiers.append(.originalTransactionId(original)) }
                }
                identifiers += result.customers.map { .appAccountToken($0) }
            } else {
                throw ValidationError("name the customer")
            }
            let chosen = identifiers
            let byOrder = orderId != nil
            let reports = try await RecoveryEnvironment.withDatabase { database in
                var ids: [UUID] = []
                for identifier in chosen {
                    // An order's purchases name their owners; the tokens Apple returned are only the fallback.
                    if case .appAccountToken = identifier, byOrder, !ids.isEmpty { continue }
                    let found = try await CustomerLookup.customers(
                        identifier, environment: environment, database: database, logger: OperatorEnvironment.logger)
                    for id in found where !ids.contains(id) { ids.append(id) }
                }
                var reports: [CustomerReport] = []
                for id in ids {
                    let report = try await CustomerReport.load(
                        customerID: id, environment: environment, database: database, logger: OperatorEnvironment.logger)
                    if !report.isEmpty { reports.append(report) }
                }
                return reports
            }
            guard !reports.isEmpty else {
                throw OperationsError(.customerNotFound, "grant has no customer for \(lookup.by) \(lookup.value)")
            }
            if json {
                OperatorEnvironment.printJSON(Output(lookup: lookup, customers: reports))
            } else {
                for note in notes { print(note) }
                print(reports.map(\.text).joined(separator: "\n\n"))
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
