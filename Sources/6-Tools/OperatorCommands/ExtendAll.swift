import AppStore
import AppStoreServerAPI
import ArgumentParser
import Foundation
import PipelineOperations
import PipelineRecords
import RecoveryJobs

/// `appstorectl extend-all`: extend every active subscriber of a product at Apple.
struct ExtendAll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extend-all",
        abstract: "Ask Apple to extend the renewal date of every active subscriber of a product, and record who asked.",
        discussion: """
            Records the request in mass_renewal_extensions with --requested-by, then calls Extend Subscription Renewal \
            Dates for All Active Subscribers for --product (1 to 90 days, optionally only --storefronts) and records \
            Apple's answer. Apple extends in the background: each extended subscription's RENEWAL_EXTENDED moves its \
            end through the pipeline; each one Apple could not extend (not active, or extended twice this year) \
            comes as RENEWAL_EXTENSION/FAILURE and the end as RENEWAL_EXTENSION/SUMMARY, which grant records against \
            the request (see extend-status). A repeated --request-id is recorded once and gets Apple's first answer. \
            With --wait it then asks Apple's status endpoint every second until Apple says it is complete. \
            API from \(RecoveryEnvironment.apiVariables); database from \(RecoveryEnvironment.databaseVariables). \
            Exit status: 0 when Apple accepted (and, with --wait, finished), 1 when Apple refused, had not finished \
            within --wait-seconds or a step failed, 2 on bad usage.
            """)

    @Option(help: "The auto-renewable subscription product.")
    var product: String

    @OptionGroup var terms: ExtensionTermsOptions

    @Option(help: "Only these storefronts, comma-separated ISO 3166-1 alpha-3 codes (e.g. USA,GBR); default: all.")
    var storefronts: String?

    @Option(help: "Your unique ID for the request (a UUID); default: a new one.")
    var requestId: String?

    @Flag(help: "Wait until Apple says it extended everyone (its status endpoint), at most --wait-seconds.")
    var wait = false

    @Option(help: "How long --wait waits.")
    var waitSeconds: Int = 600

    @OptionGroup var requester: RequesterOptions

    @OptionGroup var app: AppOptions

    @Flag(help: "Print the request as one JSON object.")
    var json = false

    var storefrontCodes: [String]? {
        storefronts.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).uppercased() } }
    }

    func validate() throws {
        guard !product.isEmpty else { throw ValidationError("--product must name a product") }
        if let codes = storefrontCodes {
            guard !codes.isEmpty, codes.allSatisfy({ $0.count == 3 && $0.allSatisfy { $0.isASCII && $0.isLetter } }) else {
                throw ValidationError("--storefronts must be ISO 3166-1 alpha-3 codes, e.g. USA,GBR")
            }
        }
        if let requestId, UUID(uuidString: requestId) == nil { throw ValidationError("--request-id must be a UUID") }
        guard waitSeconds > 0 else { throw ValidationError("--wait-seconds must be positive") }
    }

    func run() async throws {
        do {
            let configuration = try RecoveryEnvironment.apiSettings()
            let target = try RecoveryEnvironment.target(app: app.app, environment: app.environment, configuration: configuration)
            let client = try RecoveryEnvironment.apiClient(configuration)
            let request = MassRenewalExtensionRequest(
                environment: target.environment.rawValue, bundleId: target.bundleId, productId: product,
                requestIdentifier: requestId?.lowercased() ?? UUID().uuidString.lowercased(), storefrontCountryCodes: storefrontCodes,
                extendByDays: terms.days, reasonCode: terms.reason, requestedBy: requester.who)
            let (wait, patience) = (wait, Duration.seconds(waitSeconds))
            let apple = try await RecoveryEnvironment.withDatabase { database in
                let job = MassRenewalExtensionJob(client: client, database: database, logger: OperatorEnvironment.logger)
                try await job.extendAll(request, target: target)
                guard wait else { return nil as MassExtendRenewalDateStatusResponse? }
                return try await job.waitUntilComplete(request, target: target, patience: patience)
            }
            if json {
                OperatorEnvironment.printJSON(request)
            } else {
                print(
                    "Apple accepted extending every active subscriber of \(product) (\(target)) by \(terms.days) day(s)"
                        + "\(storefrontCodes.map { " in " + $0.joined(separator: ",") } ?? ""), request \(request.requestIdentifier), "
                        + "asked by \(request.requestedBy); follow it with appstorectl extend-status --request-id \(request.requestIdentifier)")
                if let apple {
                    print(
                        "Apple: \(apple.complete == true ? "complete" : "still in progress after \(waitSeconds) s"), "
                            + "\(apple.succeededCount ?? 0) extended, \(apple.failedCount ?? 0) failed")
                }
            }
            if let apple, apple.complete != true {
                throw OperationsError(.massExtensionIncomplete, "Apple had not finished request \(request.requestIdentifier) after \(waitSeconds) s")
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }
}

/// `appstorectl extend-status`: the mass extensions, as Apple and the pipeline see them.
struct ExtendStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extend-status",
        abstract: "Show mass renewal extensions: Apple's status and what its SUMMARY and FAILURE notifications reported.",
        discussion: """
            For --request-id, or the app's newest 20 mass extensions: the request (who, when, product, days, \
            storefronts), Apple's answer, Apple's Get Status of Subscription Renewal Date Extensions for accepted \
            ones, and what grant recorded from RENEWAL_EXTENSION/SUMMARY (counts, completion) and /FAILURE (the \
            subscriptions not extended). API from \(RecoveryEnvironment.apiVariables); database from \
            \(RecoveryEnvironment.databaseVariables). Exit status: 0 when shown, 1 when a step failed, 2 on bad usage.
            """)

    @Option(help: "One request; default: the newest 20.")
    var requestId: String?

    @OptionGroup var app: AppOptions

    @Flag(help: "Print one JSON object per line per mass extension.")
    var json = false

    func run() async throws {
        do {
            let configuration = try RecoveryEnvironment.apiSettings()
            let target = try RecoveryEnvironment.target(app: app.app, environment: app.environment, configuration: configuration)
            let client = try RecoveryEnvironment.apiClient(configuration)
            let requestID = requestId?.lowercased()
            let all = try await RecoveryEnvironment.withDatabase { database in
                try await MassRenewalExtensionJob(client: client, database: database, logger: OperatorEnvironment.logger)
                    .status(requestIdentifier: requestID, target: target)
            }
            if requestID != nil, all.isEmpty {
                throw OperationsError(.massExtensionNotFound, "no mass extension \(requestID ?? "") of \(target) is recorded")
            }
            if json {
                for status in all { OperatorEnvironment.printJSON(status) }
                return
            }
            if all.isEmpty { print("no mass extensions of \(target) recorded") }
            for s in all { print(Self.describe(s)) }
        } catch let error as ValidationError {
            throw error
        } catch {
            OperatorEnvironment.fail(error)
        }
    }

    static func describe(_ s: MassRenewalExtensionStatus) -> String {
        var lines = [
            "\(s.requestIdentifier): \(s.productId) +\(s.extendByDays)d reason \(s.reasonCode)"
                + "\(s.storefrontCountryCodes.map { " in " + $0.joined(separator: ",") } ?? ""), asked by \(s.requestedBy) at "
                + "\(Timestamp.iso8601(s.requestedAt)); Apple \(s.appleOutcome)\(s.appleError.map { " (\($0))" } ?? "")"
        ]
        if let complete = s.appleComplete {
            lines.append(
                "  Apple: \(complete ? "complete" : "in progress"), \(s.appleSucceededCount ?? 0) extended, \(s.appleFailedCount ?? 0) failed")
        }
        if let done = s.reportedComplete {
            lines.append(
                "  SUMMARY at \(Timestamp.iso8601(done)): \(s.reportedSucceededCount ?? 0) extended, \(s.reportedFailedCount ?? 0) failed")
        } else if s.appleOutcome != "refused" {
            lines.append("  no SUMMARY recorded yet")
        }
        if !s.failedOriginalTransactionIds.isEmpty {
            lines.append("  FAILURE: \(s.failedOriginalTransactionIds.joined(separator: ", "))")
        }
        return lines.joined(separator: "\n")
    }
}
