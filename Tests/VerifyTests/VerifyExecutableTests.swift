import Foundation
import TestSupport
import Testing
import VerifyService

/// The built `verify` binary, as an operator starts it.
@Suite("verify executable", .timeLimit(.minutes(15)))
struct VerifyExecutableTests {
    @Test("the verify executable lists its variables with --help")
    func verifyHelp() async throws {
        let result = try await BuiltProducts.run("verify", ["--help"])
        #expect(result.status == 0)
        for name in VerifyConfiguration.variables.map(\.name) + ["KAFKA_BOOTSTRAP_SERVERS"] {
            #expect(result.stdout.contains(name))
        }
    }
}
