import AppStore
import ArgumentParser
import Foundation
import PipelineOperations
import RecoveryJobs

/// `appstorectl customer`: what grant stored about one customer.
struct Customer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a customer's entitlements, purchases, consumable balances and change history with causes.",
        discussion: """
            CUSTOMER_ID is the appAccountToken (a UUID) the app set at purchase. Read-only queries over grant's \
            tables; database from \(RecoveryEnvironment.databaseVariables). Exit status: 0 when grant knows the \
            customer, 1 when it does not or the database fails, 2 on bad usage.
            """)

    @Argument(help: "The customer's ID (appAccountToken UUID).")
    var customerID: String

    @Option(help: "Only Sandbox or Production data.")
    var environment: String?

    func validate() throws {
        guard UUID(uuidString: customerID) != nil else { throw ValidationError("CUSTOMER_ID must be a UUID (got \(customerID))") }
        if let environment, AppListParser.environment(environment) == nil {
            throw ValidationError("--environment must be Sandbox or Production (got \(environment))")
        }
    }

    func run() async throws {
        do {
            let id = UUID(uuidString: customerID) ?? UUID()
            let environment = self.environment.flatMap(AppListParser.environment)?.rawValue
            let report = try await RecoveryEnvironment.withDatabase { database in
                try await CustomerReport.load(customerID: id, environment: environment, database: database, logger: OperatorEnvironment.logger)
            }
            guard !report.isEmpty else { throw OperationsError("customer_not_found", "grant has no data about customer \(customerID.lowercased())") }
            print(report.text)
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
