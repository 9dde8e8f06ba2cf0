import ArgumentParser
import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import RecoveryJobs

/// `appstorectl extend`: extend one subscription's renewal date at Apple.
struct Extend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask Apple to extend a subscription's renewal date, record who asked, and feed the subscription.",
        discussion: """
            Calls Extend a Subscription Renewal Date for --original-transaction-id (1 to 90 days; Apple allows two \
            extensions a year per subscription, active ones only, never a family member's), records the request \
            in renewal_extensions with --requested-by and Apple's answer, and publishes the subscription's latest \
            transaction as Apple now signs it to the verified topic (source reconcile): grant moves the end at \
            once; Apple's RENEWAL_EXTENDED follows. A repeated --request-identifier gets Apple's first answer. \
            API from \(RecoveryEnvironment.apiVariables); database from \(RecoveryEnvironment.databaseVariables); \
            broker from \(RecoveryEnvironment.brokerVariables); VERIFIED_TOPIC overrides the topic. Exit status: \
            0 when extended and fed, 1 when Apple refused or a step failed, 2 on bad usage.
            """)

    @Option(help: "The subscription's original transaction ID.")
    var originalTransactionId: String

    @OptionGroup var terms: ExtensionTermsOptions

    @Option(help: "Your unique ID for the request (≤ 128 characters); default: a new UUID.")
    var requestIdentifier: String?

    @OptionGroup var requester: RequesterOptions

    @OptionGroup var app: AppOptions

    @Flag(
        help:
            "Print the result as one JSON object (environment, originalTransactionId, requestIdentifier, extendByDays, reasonCode, requestedBy, effectiveDate, fed)."
    )
    var json = false

    func validate() throws {
        guard !originalTransactionId.isEmpty, originalTransactionId.allSatisfy(\.isNumber) else {
            throw ValidationError("--original-transaction-id must be Apple's numeric ID")
        }
        guard (requestIdentifier ?? "x").count <= 128, requestIdentifier?.isEmpty != true else {
            throw ValidationError("--request-identifier must be 1 to 128 characters")
        }
    }

    func run() async throws {
        do {
            let configuration = try RecoveryEnvironment.apiSettings()
            let target = try RecoveryEnvironment.target(app: app.app, environment: app.environment, configuration: configuration)
            let client = try RecoveryEnvironment.apiClient(configuration)
            let who = requester.who
            let requestID = requestIdentifier ?? UUID().uuidString.lowercased()
            let producer = try RecoveryEnvironment.producer()
            let topic = ProcessInfo.processInfo.environment["VERIFIED_TOPIC"] ?? Topics.verified
            let (original, days, reason) = (originalTransactionId, terms.days, terms.reason)
            let result = try await RecoveryEnvironment.withDatabase { database in
                try await RenewalExtensionJob(client: client, database: database, logger: OperatorEnvironment.logger).extend(
                    originalTransactionId: original, days: days, reasonCode: reason, requestIdentifier: requestID, requestedBy: who,
                    target: target, producer: producer, verifiedTopic: topic)
            }
            await producer.close()
            if json {
                OperatorEnvironment.printJSON(result)
            } else {
                print(
                    "Apple extended subscription \(result.originalTransactionId) (\(target)) by \(terms.days) day(s) to "
                        + "\(result.effectiveDate.map(Timestamp.iso8601) ?? "?"), request \(requestID), asked by \(who)")
                print("fed \(result.fed ?? "-") → \(topic)")
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}
