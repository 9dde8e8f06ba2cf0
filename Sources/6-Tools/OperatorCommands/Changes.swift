import ArgumentParser
import Foundation
import PipelineOperations

/// `appstorectl changes audit`: is the stream downstream consumers read whole?
struct Changes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Check the entitlement changes topic that downstream services consume.",
        subcommands: [Audit.self]
    )

    struct Audit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Read entitlements.changes.v1 from the start: every customer's seq must run 1, 2, 3, … without a gap or a change published twice.",
            discussion: """
                Records delivered again unchanged (the outbox publishes at least once) are counted, not faults. \
                Exit status 0 when the stream is whole, 1 when a customer's stream has a gap, a conflict or a repeated change.
                """
        )

        @Flag(help: "Print the result as one JSON object (records, customers, redelivered, externalPurchaseTokens, faults[customer, kind, detail]).")
        var json = false

        func run() async throws {
            let audit: ChangeStreamAudit
            do { audit = try await ChangeStreamAudit.scan(client: try OperatorEnvironment.kafkaClient()) } catch {
                OperatorEnvironment.fail(error)
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(audit), as: UTF8.self))
            } else {
                for fault in audit.faults { print("\(fault.kind.padded(10))\(fault.customer)  \(fault.detail)") }
                print(
                    "changes: \(audit.records) records, \(audit.customers) customers, \(audit.redelivered) redelivered, "
                        + "\(audit.externalPurchaseTokens) external purchase tokens, "
                        + "\(audit.faults.count) faults\(audit.isConsistent ? " — every customer's seq is whole" : "")")
            }
            if !audit.isConsistent { throw ExitCode(1) }
        }
    }
}
