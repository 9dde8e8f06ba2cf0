import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import RecoveryJobs

/// `appstorectl bind`: stamp a customer's appAccountToken on a purchase at Apple.
struct Bind: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask Apple to set a purchase's appAccountToken to a customer, record who asked, and feed the purchase.",
        discussion: """
            Calls Set App Account Token for --original-transaction-id with --customer (Apple then carries the \
            token in the purchase's transactions and renewal info, and its later notifications name the \
            customer), records the request in token_bindings with --requested-by, and publishes the purchase's \
            transaction as Apple now signs it to the verified topic (source reconcile): grant gives the purchase \
            to the customer Apple names, since the newest Apple-signed token wins. Apple refuses family members' \
            purchases (4000185) and IDs that are not an original transaction ID (4000187). API from \
            \(RecoveryEnvironment.apiVariables); database from \(RecoveryEnvironment.databaseVariables); broker \
            from \(RecoveryEnvironment.brokerVariables); VERIFIED_TOPIC overrides the topic. Exit status: 0 when \
            set and fed, 1 when Apple refused or a step failed, 2 on bad usage.
            """)

    @Option(help: "The customer (appAccountToken UUID) the purchase belongs to.")
    var customer: String

    @Option(help: "The purchase's original transaction ID.")
    var originalTransactionId: String

    @OptionGroup var requester: RequesterOptions

    @OptionGroup var app: AppOptions

    @Flag(help: "Print the result as one JSON object (environment, originalTransactionId, customerId, requestedBy, transactionId, fed).")
    var json = false

    func validate() throws {
        guard UUID(uuidString: customer) != nil else { throw ValidationError("--customer must be a UUID (the customer's appAccountToken)") }
        guard !originalTransactionId.isEmpty, originalTransactionId.allSatisfy(\.isNumber) else {
            throw ValidationError("--original-transaction-id must be Apple's numeric ID")
        }
    }

    func run() async throws {
        do {
            let configuration = try RecoveryEnvironment.apiSettings()
            let target = try RecoveryEnvironment.target(app: app.app, environment: app.environment, configuration: configuration)
            let client = try RecoveryEnvironment.apiClient(configuration)
            let who = requester.who
            let producer = try RecoveryEnvironment.producer()
            let topic = ProcessInfo.processInfo.environment["VERIFIED_TOPIC"] ?? Topics.verified
            let customer = UUID(uuidString: self.customer)!
            let original = originalTransactionId
            let result = try await RecoveryEnvironment.withDatabase { database in
                try await TokenBindingJob(client: client, database: database, logger: OperatorEnvironment.logger).bind(
                    customer: customer, originalTransactionId: original, requestedBy: who, target: target, producer: producer,
                    verifiedTopic: topic)
            }
            await producer.close()
            if json {
                OperatorEnvironment.printJSON(result)
            } else {
                print(
                    "Apple set purchase \(result.originalTransactionId) (\(target)) to customer \(result.customerId), asked by \(result.requestedBy)")
                print("fed \(result.fed ?? "-") → \(topic)")
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
