import ArgumentParser
import Foundation

/// The operator tool of the pipeline (`appstorectl`). Each job is a subcommand in its own file; the
/// executable's `main` only calls ``main()``, so the commands are tested in process.
public struct AppStoreCtl: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "appstorectl",
        abstract: "Operator tool for the App Store entitlements pipeline.",
        discussion: "Exit status: 0 on success, 1 when the input is rejected or the job fails, 2 on bad usage.",
        subcommands: [
            Status.self, Inspect.self, Migrate.self, Replay.self, DeadLetters.self, Backfill.self, Reconcile.self, Refunds.self, LookupOrder.self,
            TestNotification.self, Customer.self, TopicsCommand.self, Changes.self, Bind.self, Extend.self, ExtendAll.self, ExtendStatus.self,
            SignOffer.self,
        ]
    )

    public init() {}

    /// The exit status of a failed parse: ArgumentParser exits with 64 on usage errors; this tool
    /// promises 2, like most Unix tools.
    public static let usageExitStatus: Int32 = 2

    /// Parses the process's arguments and runs the command; exits with ``usageExitStatus`` on bad
    /// usage, 1 when the job fails.
    public static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(usageExitStatus)
            }
            exit(withError: error)
        }
    }
}
