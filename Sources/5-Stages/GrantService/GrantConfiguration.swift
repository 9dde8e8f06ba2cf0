import EntitlementStore
import EnvironmentSettings
import Foundation
import GrantDecision
import PipelineMessages
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
    /// How long an outbox round woken by a commit waits for the commits that follow it.
    public var outboxGatherWindow: Duration
    /// How many outbox rows one publish round takes.
    public var outboxBatchSize: Int
    /// How many transactions apply batches at once; batches arriving meanwhile share the next one
    /// (``TransactionMerger``).
    public var concurrentTransactions: Int
    /// How long a transaction started by an arriving batch waits for the batches arriving with it.
    public var gatherWindow: Duration
    /// The keys an enriched record must be signed with to be applied (`RECORD_MAC_KEYS_FILE`); nil:
    /// records are applied unchecked.
    public var recordKeys: RecordKeys?
    /// How often ``RestoreWatch`` checks.
    public var restoreCheckInterval: Duration

    public static let productsFileSetting = Setting<String?>.optional(
        "ENTITLEMENTS_PRODUCTS_FILE",
        meaning: "JSON product → entitlement mapping; an unmapped product grants the entitlement named by its product ID")
    public static let expiryLeeway = Setting<Int>.int(
        "GRANT_EXPIRY_LEEWAY_S", default: 3600, in: 0...30 * 86_400, meaning: "seconds of access past expiresDate while a renewal is expected")
    public static let transferPolicy = Setting<GrantPolicy.TransferPolicy>.choice(
        "GRANT_TRANSFER_POLICY", default: .refuse,
        meaning: "refuse (first customer keeps a purchase) or allow (latest claim takes it over)")
    public static let proratedRefund = Setting<GrantPolicy.ProratedRefundPolicy>.choice(
        "GRANT_PRORATED_REFUND", default: .revoke,
        meaning: "revoke (a prorated refund ends access at Apple's revocationDate) or keep (access kept); consumables always lose the refunded share")
    public static let rescindedConsent = Setting<GrantPolicy.RescindedConsentPolicy>.choice(
        "GRANT_RESCINDED_CONSENT", default: .notify,
        meaning:
            "notify (RESCIND_CONSENT publishes consent_rescinded; access unchanged) or suspend (also every entitlement of the customer becomes inactive, and stays so)"
    )
    public static let outboxPoll = Setting<Duration>.milliseconds(
        "OUTBOX_POLL_MS", default: .milliseconds(500), in: 10...60_000, meaning: "outbox publisher poll interval")
    public static let outboxBatch = Setting<Int>.int("OUTBOX_BATCH_SIZE", default: 500, in: 1...10_000, meaning: "changes published per round")
    public static let outboxGather = Setting<Duration>.milliseconds(
        "OUTBOX_GATHER_MS", default: .milliseconds(20), in: 0...1_000,
        meaning: "how long an outbox round woken by a commit waits for the commits that follow it")
    public static let concurrentTransactionsSetting = Setting<Int>.int(
        "GRANT_CONCURRENT_TRANSACTIONS", default: 2, in: 1...64,
        meaning: "transactions applying batches at once; batches arriving meanwhile share the next one")
    public static let gatherWindowSetting = Setting<Duration>.milliseconds(
        "GRANT_GATHER_MS", default: .milliseconds(5), in: 0...1_000,
        meaning: "how long a transaction started by an arriving batch waits for the batches arriving with it")

    public static let restoreCheck = Setting<Duration>.milliseconds(
        "GRANT_RESTORE_CHECK_MS", default: .seconds(30), in: 1_000...3_600_000,
        meaning: "how often grant checks that Postgres still holds events it committed (a restore or failover loses them)")

    /// The variables, for `--help`.
    public static let variables =
        StoreConfiguration.variables + [
            productsFileSetting.help, expiryLeeway.help, transferPolicy.help, proratedRefund.help, rescindedConsent.help, outboxPoll.help,
            outboxBatch.help,
            outboxGather.help,
            concurrentTransactionsSetting.help, gatherWindowSetting.help, RecordKeys.fileSetting.help, restoreCheck.help,
        ]

    public init(
        store: StoreConfiguration, policy: GrantPolicy, productsFile: String? = nil,
        outboxPollInterval: Duration = outboxPoll.defaultValue, outboxBatchSize: Int = outboxBatch.defaultValue,
        outboxGatherWindow: Duration = outboxGather.defaultValue,
        concurrentTransactions: Int = concurrentTransactionsSetting.defaultValue, gatherWindow: Duration = gatherWindowSetting.defaultValue,
        recordKeys: RecordKeys? = nil, restoreCheckInterval: Duration = restoreCheck.defaultValue
    ) {
        self.restoreCheckInterval = restoreCheckInterval
        self.store = store
        self.policy = policy
        self.productsFile = productsFile
        self.outboxPollInterval = outboxPollInterval
        self.outboxBatchSize = outboxBatchSize
        self.outboxGatherWindow = outboxGatherWindow
        self.concurrentTransactions = concurrentTransactions
        self.gatherWindow = gatherWindow
        self.recordKeys = recordKeys
    }

    public init(environment env: EnvironmentReader) throws(ConfigurationError) {
        store = try StoreConfiguration(environment: env)
        var catalog = ProductCatalog()
        productsFile = try env.read(Self.productsFileSetting)
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
        let leeway = try env.read(Self.expiryLeeway)
        let transfer = try env.read(Self.transferPolicy)
        policy = GrantPolicy(
            catalog: catalog, expiryLeeway: TimeInterval(leeway), transferPolicy: transfer, proratedRefund: try env.read(Self.proratedRefund),
            rescindedConsent: try env.read(Self.rescindedConsent))
        outboxPollInterval = try env.read(Self.outboxPoll)
        outboxBatchSize = try env.read(Self.outboxBatch)
        outboxGatherWindow = try env.read(Self.outboxGather)
        concurrentTransactions = try env.read(Self.concurrentTransactionsSetting)
        gatherWindow = try env.read(Self.gatherWindowSetting)
        recordKeys = try env.read(RecordKeys.fileSetting)
        restoreCheckInterval = try env.read(Self.restoreCheck)
    }
}
