import EntitlementStore
import EnvironmentSettings
import Foundation
import GrantDecision
import StageRuntime

/// What grant reads from its environment besides the stage runtime's variables. Each value is
/// validated at start; a bad one stops the process with one line naming the variable.
public struct GrantConfiguration: Sendable {
    public var store: StoreConfiguration
    public var policy: GrantPolicy
    /// Where the product mapping came from (for the start-up log).
    public var productsFile: String?
    /// How often the outbox publisher looks for unpublished changes when nothing woke it.
    public var outboxPollInterval: Duration
    /// How many outbox rows one publish round takes.
    public var outboxBatchSize: Int
    /// How many transactions apply batches at once; batches arriving meanwhile share the next one
    /// (``TransactionMerger``).
    public var concurrentTransactions: Int

    public static let variables: [(name: String, default: String, meaning: String)] =
        StoreConfiguration.variables + [
            (
                "ENTITLEMENTS_PRODUCTS_FILE", "",
                "JSON product → entitlement mapping; an unmapped product grants the entitlement named by its product ID"
            ),
            ("GRANT_EXPIRY_LEEWAY_S", "3600", "seconds of access past expiresDate while a renewal is expected"),
            ("GRANT_TRANSFER_POLICY", "refuse", "refuse (first customer keeps a purchase) or allow (latest claim takes it over)"),
            ("OUTBOX_POLL_MS", "500", "outbox publisher poll interval"),
            ("OUTBOX_BATCH_SIZE", "500", "changes published per round"),
            ("GRANT_CONCURRENT_TRANSACTIONS", "2", "transactions applying batches at once; batches arriving meanwhile share the next one"),
        ]

    public init(
        store: StoreConfiguration, policy: GrantPolicy, productsFile: String? = nil,
        outboxPollInterval: Duration = .milliseconds(500), outboxBatchSize: Int = 500, concurrentTransactions: Int = 2
    ) {
        self.store = store
        self.policy = policy
        self.productsFile = productsFile
        self.outboxPollInterval = outboxPollInterval
        self.outboxBatchSize = outboxBatchSize
        self.concurrentTransactions = concurrentTransactions
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        store = try StoreConfiguration(environment: env)
        var catalog = ProductCatalog()
        productsFile = env.string("ENTITLEMENTS_PRODUCTS_FILE")
        if let path = productsFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(variable: "ENTITLEMENTS_PRODUCTS_FILE", problem: "names a file that cannot be read (\(path))")
            }
            do {
                catalog = try ProductCatalog.parse(data)
            } catch {
                throw ConfigurationError(variable: "ENTITLEMENTS_PRODUCTS_FILE", problem: "is not valid: \(error) (\(path))")
            }
        }
        let leeway = try env.int("GRANT_EXPIRY_LEEWAY_S", default: 3600, in: 0...30 * 86_400)
        let transfer = try env.choice("GRANT_TRANSFER_POLICY", default: GrantPolicy.TransferPolicy.refuse)
        policy = GrantPolicy(catalog: catalog, expiryLeeway: TimeInterval(leeway), transferPolicy: transfer)
        outboxPollInterval = try env.milliseconds("OUTBOX_POLL_MS", default: .milliseconds(500), in: 10...60_000)
        outboxBatchSize = try env.int("OUTBOX_BATCH_SIZE", default: 500, in: 1...10_000)
        concurrentTransactions = try env.int("GRANT_CONCURRENT_TRANSACTIONS", default: 2, in: 1...64)
    }
}
