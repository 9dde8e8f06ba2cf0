import AppStore
import AppStoreServerAPI
import Foundation
import Synchronization

/// The simulator's in-memory model of customers and their purchases, shared by the HTTP routes and
/// by code that drives the simulator directly (tests, a lifecycle simulation on a compressed clock).
///
/// Only Sandbox data lives here: the simulator's CA is a test CA, which no verifier accepts for
/// Production. Every method is thread-safe.
public final class SimulatorStore: Sendable {
    struct State {
        var transactions: [String: SimulatedTransaction] = [:]  // by transactionId
        // Indexes, so lookups stay cheap with a lifecycle run's tens of thousands of transactions.
        var transactionIDsByCustomer: [String: Set<String>] = [:]
        var transactionIDsByOriginal: [String: Set<String>] = [:]
        var notificationIndexByUUID: [String: Int] = [:]
        var sequence = 0
        var subscriptionOverrides: [String: SimulatedSubscriptionOverride] = [:]  // by originalTransactionId
        var notifications: [SimulatedNotification] = []
        var testNotifications: [String: SimulatedNotification] = [:]  // by token
        var orders: [String: [String]] = [:]
        var extensions: [String: [Date]] = [:]  // originalTransactionId → extension dates
        var extensionRequests: [String: ExtendRenewalDateResponse] = [:]  // requestIdentifier → answer
        var massExtensions: [String: SimulatedMassExtension] = [:]  // requestIdentifier → progress
        var appliedExtensions: [SimulatedExtension] = []
        var assignedTokens: [String: UUID] = [:]  // originalTransactionId → token set with Set App Account Token
        var consumption: [ReceivedConsumption] = []
        var webhookURL: String?  // where TEST notifications are delivered
    }

    let state = Mutex(State())
    /// Transactions already signed, by `transactionId` (see ``SignedJWSCache``). A JWS carries its
    /// three-certificate chain (about 4 KB), so a generation of 25,000 holds a bench run's purchases
    /// in about 100 MB at most.
    let signedTransactions = SignedJWSCache<JWSTransactionDecodedPayload>(capacity: 25_000)
    /// Renewal infos already signed, by `originalTransactionId`.
    let signedRenewalInfos = SignedJWSCache<JWSRenewalInfoDecodedPayload>(capacity: 10_000)
    /// The simulator's notion of now (replace it to run a lifecycle on a compressed clock).
    public let clock: @Sendable () -> Date
    /// App Apple IDs to put into notifications and answers, by bundle ID.
    public let appAppleIds: [String: Int64]

    public init(appAppleIds: [String: Int64] = [:], clock: @escaping @Sendable () -> Date = { Date() }) {
        self.appAppleIds = appAppleIds
        self.clock = clock
    }

    /// Now, in whole milliseconds, as Apple's dates are.
    public func now() -> Date { AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: clock())) }

    // MARK: - Seeding and changing data

    /// Adds or replaces transactions (by `transactionId`). Missing `environment` becomes Sandbox,
    /// missing `signedDate` now; the customer defaults to one account per `originalTransactionId`.
    /// - Throws: ``SimulatorInputError`` for a transaction without IDs or bundle ID, or not Sandbox.
    public func upsert(_ transactions: [JWSTransactionDecodedPayload], customerID: String? = nil) throws(SimulatorInputError) {
        for transaction in transactions {
            guard let id = transaction.transactionId, !id.isEmpty, let original = transaction.originalTransactionId, !original.isEmpty,
                transaction.bundleId?.isEmpty == false
            else {
                throw SimulatorInputError("a transaction needs transactionId, originalTransactionId and bundleId")
            }
            guard transaction.environment == nil || transaction.environment == .sandbox else {
                throw SimulatorInputError("the simulator holds Sandbox data only (transaction \(id) says \(transaction.environment?.rawValue ?? ""))")
            }
        }
        let now = now()
        state.withLock { state in
            for var transaction in transactions {
                transaction.environment = .sandbox
                if transaction.signedDate == nil { transaction.signedDate = now }
                let id = transaction.transactionId!
                let original = transaction.originalTransactionId!
                // A token set with Set App Account Token carries into later transactions that bring none.
                if transaction.appAccountToken == nil, transaction.inAppOwnershipType != .familyShared {
                    transaction.appAccountToken = state.assignedTokens[original]
                }
                let previous = state.transactions[id]
                let customer =
                    customerID ?? previous?.customerID
                    ?? state.transactionIDsByOriginal[original]?.first.flatMap { state.transactions[$0]?.customerID }
                    ?? "customer-\(original)"
                if let previous {
                    state.transactionIDsByCustomer[previous.customerID]?.remove(id)
                    if let old = previous.payload.originalTransactionId { state.transactionIDsByOriginal[old]?.remove(id) }
                }
                state.sequence += 1
                state.transactions[id] = SimulatedTransaction(payload: transaction, customerID: customer, modifiedSequence: state.sequence)
                state.transactionIDsByCustomer[customer, default: []].insert(id)
                state.transactionIDsByOriginal[original, default: []].insert(id)
            }
        }
    }

    /// Changes one stored transaction (a refund sets `revocationDate`, an upgrade `isUpgraded`…) and
    /// bumps its modification order, as Apple does.
    @discardableResult
    public func modifyTransaction(_ transactionId: String, _ change: (inout JWSTransactionDecodedPayload) -> Void) -> Bool {
        state.withLock { state in
            guard var stored = state.transactions[transactionId] else { return false }
            change(&stored.payload)
            state.sequence += 1
            stored.modifiedSequence = state.sequence
            state.transactions[transactionId] = stored
            return true
        }
    }

    /// Set App Account Token: every transaction of the purchase carries `token` from now on (each
    /// counts as modified, as Apple re-signs them), and so do later ones and the renewal info.
    public func setAppAccountToken(_ token: UUID, originalTransactionId: String, bundleId: String) {
        state.withLock { state in
            state.assignedTokens[originalTransactionId] = token
            for id in state.transactionIDsByOriginal[originalTransactionId] ?? [] {
                guard var stored = state.transactions[id], stored.payload.bundleId == bundleId else { continue }
                stored.payload.appAccountToken = token
                state.sequence += 1
                stored.modifiedSequence = state.sequence
                state.transactions[id] = stored
            }
        }
    }

    /// Overrides the status or renewal info of a subscription.
    public func setSubscription(_ originalTransactionId: String, _ override: SimulatedSubscriptionOverride) {
        state.withLock { $0.subscriptionOverrides[originalTransactionId] = override }
    }

    /// Records an order ID for Look Up Order ID.
    public func addOrder(_ orderID: String, transactionIds: [String]) {
        state.withLock { $0.orders[orderID] = transactionIds }
    }

    /// Stores a signed notification for Get Notification History.
    func addNotification(_ notification: SimulatedNotification) {
        state.withLock { state in
            state.notificationIndexByUUID[notification.notificationUUID] = state.notifications.count
            state.notifications.append(notification)
        }
    }

    /// Forgets all data (not the CA or the key).
    public func reset() {
        state.withLock { $0 = State() }
        signedTransactions.removeAll()
        signedRenewalInfos.removeAll()
    }

    /// Records a renewal-date extension applied through the API.
    func recordAppliedExtension(_ applied: SimulatedExtension) {
        state.withLock { $0.appliedExtensions.append(applied) }
    }

    /// Renewal-date extensions applied through the API (single or mass), oldest first.
    public var appliedExtensions: [SimulatedExtension] { state.withLock { $0.appliedExtensions } }

    /// Consumption reports received so far.
    public var receivedConsumption: [ReceivedConsumption] { state.withLock { $0.consumption } }

    // MARK: - Queries

    /// The stored transaction with `id` as transaction, original transaction or app transaction ID, in `bundleId`.
    public func transaction(anyID id: String, bundleId: String) -> SimulatedTransaction? {
        state.withLock { state in
            if let direct = state.transactions[id], direct.payload.bundleId == bundleId { return direct }
            let byOriginal = (state.transactionIDsByOriginal[id] ?? []).compactMap { state.transactions[$0] }
                .filter { $0.payload.bundleId == bundleId }
            let candidates =
                byOriginal.isEmpty
                ? state.transactions.values.filter { $0.payload.bundleId == bundleId && $0.payload.appTransactionId == id }
                : byOriginal
            return candidates.min { $0.modifiedSequence < $1.modifiedSequence }
        }
    }

    /// The customers holding transactions of `bundleId`.
    public func customerIDs(bundleId: String) -> [String] {
        state.withLock { state in
            state.transactionIDsByCustomer.filter { $0.value.contains { state.transactions[$0]?.payload.bundleId == bundleId } }.map(\.key)
        }
    }

    /// The auto-renewable subscription products of `bundleId` any stored transaction is of.
    public func subscriptionProductIds(bundleId: String) -> Set<String> {
        state.withLock { state in
            Set(
                state.transactions.values.lazy.filter { $0.payload.bundleId == bundleId && $0.payload.type == .autoRenewableSubscription }
                    .compactMap(\.payload.productId))
        }
    }

    /// A customer's `appTransactionId` when their transactions carry none: "70" and 16 digits
    /// derived from who they are (FNV-1a), the same on every run.
    public static func appTransactionId(ofCustomer customerID: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in customerID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let digits = String(hash % 10_000_000_000_000_000)
        return "70" + String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// A customer's app transaction (their download of the app): the `appTransactionId` their
    /// transactions carry (or ``appTransactionId(ofCustomer:)``), first purchase date, version 1.
    public func appTransaction(ofCustomer customer: String, bundleId: String) -> AppTransaction {
        let purchases = transactions(customerID: customer, bundleId: bundleId).map(\.payload)
        return AppTransaction(
            receiptType: .sandbox, appAppleId: appAppleIds[bundleId], bundleId: bundleId, applicationVersion: "1",
            receiptCreationDate: now(), originalPurchaseDate: purchases.compactMap(\.originalPurchaseDate).min(),
            originalApplicationVersion: "1.0",
            appTransactionId: purchases.lazy.compactMap(\.appTransactionId).first ?? Self.appTransactionId(ofCustomer: customer),
            originalPlatform: .iOS)
    }

    /// Every transaction of a customer in an app, in modification order.
    public func transactions(customerID: String, bundleId: String) -> [SimulatedTransaction] {
        state.withLock { state in
            (state.transactionIDsByCustomer[customerID] ?? []).compactMap { state.transactions[$0] }
                .filter { $0.payload.bundleId == bundleId }
                .sorted { $0.modifiedSequence < $1.modifiedSequence }
        }
    }

    /// The override of a subscription, if any.
    func subscriptionOverride(_ originalTransactionId: String) -> SimulatedSubscriptionOverride? {
        state.withLock { $0.subscriptionOverrides[originalTransactionId] }
    }

    /// Stored notifications of an app, oldest first.
    public func notifications(bundleId: String) -> [SimulatedNotification] {
        state.withLock { $0.notifications.filter { $0.bundleId == bundleId }.sorted { $0.firstSentDate < $1.firstSentDate } }
    }
}

/// Seed data the simulator cannot hold.
public struct SimulatorInputError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
