import AppStore
import ArgumentParser
import Foundation
import VerifyService
import X509

/// `appstorectl inspect`: verifies and decodes one piece of App Store signed data, as support needs
/// when a customer's purchase "did not arrive".
struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify and decode a signedPayload, a webhook or upload body, or any App Store JWS.",
        discussion: """
            Reads FILE (or standard input for -): a compact JWS, {"signedPayload": …} or \
            {"signedTransaction": …}. The kind (notification, transaction, renewal info, app transaction) \
            is detected from the payload. Prints the decoded JSON with every nested JWS verified and decoded. \
            Bundle ID, environment and app Apple ID not given as flags are taken from the token itself, \
            and standard error says so.
            Exit status: 0 when valid, 1 when rejected (code and message on standard error), 2 on bad usage.
            """
    )

    @Argument(help: "The file to read, or - for standard input.")
    var input: String

    @Option(name: .customLong("bundle-id"), help: "The bundle ID the data must name.")
    var bundleId: String?

    @Option(name: .customLong("app-apple-id"), help: "The app Apple ID Production data must name.")
    var appAppleId: Int64?

    @Option(help: "Sandbox or Production.")
    var environment: String?

    @Option(
        name: .customLong("trust-root"),
        help: ArgumentHelp(
            "A DER or PEM root to trust besides Apple Root CA - G3 (repeatable); never used for Production data.",
            valueName: "file"))
    var trustRoots: [String] = []

    @Option(name: .customLong("validation-date"), help: "When certificates must be valid: \(ValidationTimeOption.syntax).")
    var validationDate = "signed-date"

    @Flag(
        name: .customLong("revocation-check"),
        help:
            "Ask each certificate's OCSP responder whether the leaf or the intermediate is revoked, as verify does with APPSTORE_REVOCATION_CHECK=on (certificates are then checked at the current time)."
    )
    var revocationCheck = false

    func validate() throws {
        if let environment, AppListParser.environment(environment) == nil {
            throw ValidationError("--environment must be Sandbox or Production (got \(environment))")
        }
        if revocationCheck, case .fixed = ValidationTimeOption.parse(validationDate) {
            throw ValidationError(
                "--revocation-check validates certificates at the current time; it cannot be combined with a fixed --validation-date")
        }
        if ValidationTimeOption.parse(validationDate) == nil {
            throw ValidationError("--validation-date must be \(ValidationTimeOption.syntax) (got \(validationDate))")
        }
        if let appAppleId, appAppleId <= 0 {
            throw ValidationError("--app-apple-id must be a positive number")
        }
        if let bundleId, bundleId.isEmpty {
            throw ValidationError("--bundle-id must not be empty")
        }
    }

    func run() async throws {
        do {
            let options = InspectOptions(
                bundleId: bundleId, appAppleId: appAppleId, environment: environment.flatMap(AppListParser.environment),
                trustedRoots: try loadRoots(), validationTime: ValidationTimeOption.parse(validationDate) ?? .signedDate,
                revocationChecking: revocationCheck ? RevocationChecking(transport: HTTPOCSPTransport()) : nil)
            let plan = try InspectionPlan(input: try readInput(), options: options)
            for line in plan.assumptions { printError("note: \(line)") }
            let report = try await plan.run()
            print(try report.prettyJSON())
        } catch let failure as InspectFailure {
            printError(failure.isUsage ? "error: \(failure.message)" : "invalid: \(failure.code): \(failure.message)")
            throw ExitCode(failure.exitCode)
        }
    }

    private func readInput() throws(InspectFailure) -> String {
        let data: Data?
        if input == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = FileManager.default.contents(atPath: input)
        }
        guard let data else { throw .usage("cannot read \(input)") }
        guard let text = String(data: data, encoding: .utf8) else {
            throw .rejected(AppStoreVerificationError(.malformed, "the input is not UTF-8 text"))
        }
        return text
    }

    private func loadRoots() throws(InspectFailure) -> [Certificate] {
        var roots: [Certificate] = []
        for path in trustRoots {
            do {
                roots += try TrustedRootFile.load(path)
            } catch {
                throw .usage("--trust-root \(error)")
            }
        }
        return roots
    }

    private func printError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
