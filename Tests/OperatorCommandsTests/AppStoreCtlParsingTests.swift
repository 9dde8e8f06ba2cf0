import ArgumentParser
import Testing

@testable import OperatorCommands

/// What an operator types, judged in process: a bad command line is refused before anything runs,
/// with the tool's usage status (2) and a sentence naming the option, and a good one reaches the
/// command with its values typed.
@Suite("appstorectl's command line")
struct AppStoreCtlParsingTests {
    /// The usage failure `arguments` gets, with the message the operator reads.
    private func refusal(_ arguments: [String]) -> (status: Int32, message: String)? {
        do {
            _ = try AppStoreCtl.parseAsRoot(arguments)
            return nil
        } catch {
            return (AppStoreCtl.exitCode(for: error).rawValue, AppStoreCtl.message(for: error))
        }
    }

    @Test(
        "a bad command line is refused with the usage status and says what is wrong",
        arguments: [
            (["customer", "--transaction-id", "1", "--original-transaction-id", "2"], "exactly one of"),
            (["customer", "not-a-uuid"], "CUSTOMER_ID must be a UUID"),
            (["customer", "--order-id", "MQ1234"], "--order-id needs --app"),
            (["customer", "--transaction-id", "1", "--environment", "Staging"], "--environment must be Sandbox or Production"),
            (["extend", "--original-transaction-id", "abc", "--days", "3", "--reason", "1", "--app", "com.example"], "numeric ID"),
            (["extend", "--original-transaction-id", "1000", "--days", "91", "--reason", "1", "--app", "com.example"], "--days must be 1 to 90"),
            (["extend", "--original-transaction-id", "1000", "--days", "3", "--reason", "4", "--app", "com.example"], "--reason must be"),
            (["bind", "--customer", "someone", "--original-transaction-id", "1000", "--app", "com.example"], "--customer must be a UUID"),
            (["backfill", "--app", "com.example", "--since", "last tuesday"], "--since must be"),
            (["dlq", "replay", "--stage", "verify", "--partition", "0"], "--partition and --offset go together"),
            (["no-such-command"], "no-such-command"),
        ])
    func refusesBadUsage(arguments: [String], says: String) throws {
        let refused = try #require(refusal(arguments), "appstorectl \(arguments.joined(separator: " ")) was accepted")
        #expect(refused.status == AppStoreCtl.usageExitStatus || refused.status == ExitCode.validationFailure.rawValue)
        #expect(refused.message.contains(says), "\(refused.message)")
    }

    @Test("a good command line reaches its command with typed values")
    func parsesGoodUsage() throws {
        let customer = try #require(try AppStoreCtl.parseAsRoot(["customer", "--transaction-id", "2000000001", "--json"]) as? Customer)
        #expect(customer.transactionId == "2000000001" && customer.json && customer.customerID == nil)

        let extend = try #require(
            try AppStoreCtl.parseAsRoot([
                "extend", "--original-transaction-id", "1000", "--days", "7", "--reason", "3", "--app", "com.example", "--requested-by", "ops-42",
            ]) as? Extend)
        #expect(extend.originalTransactionId == "1000" && extend.terms.days == 7 && extend.terms.reason == 3)
        #expect(extend.requester.who == "ops-42" && extend.app.app == "com.example" && extend.requestIdentifier == nil)
    }

    @Test("every job is a subcommand with its own name, and usage errors promise status 2 as documented")
    func subcommandsAreDistinct() {
        let names = AppStoreCtl.configuration.subcommands.map { $0._commandName }
        #expect(Set(names).count == names.count, "\(names)")
        for job in ["inspect", "migrate", "replay", "dlq", "backfill", "reconcile", "refunds", "customer", "extend", "topics", "sign-offer"] {
            #expect(names.contains(job), "appstorectl has no \(job)")
        }
        #expect(AppStoreCtl.usageExitStatus == 2)
        #expect(AppStoreCtl.configuration.discussion.contains("2 on bad usage"))
    }
}
