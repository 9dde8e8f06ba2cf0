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
        var sequence = 0
        var subscriptionOverrides: [String: SimulatedSubscriptionOverride] = [:]  // by originalTransactionId
        var notifications: [SimulatedNotification] = []
        var testNotifications: [String: SimulatedNotification] = [:]  // by token
        var orders: [String: [String]] = [:]
        var extensions: [String: [Date]] = [:]  // originalTransactionId → extension dates
        var extensionRequests: [String: ExtendRenewalDateResponse] = [:]  // requestIdentifier → answer
        var consumption: [ReceivedConsumption] = []
        var webhookURL: String?  // where TEST notifications are delivered
    }

    let state = Mutex(State())
    /// The simulator's notion of now (replace it to run a lifecycle on a compressed clock).
    public let clock: @Sendable () -> Date
    /// App Apple IDs to put into notifications and answers, by bundle ID.
    public let appAppleIDs: [String: Int64]

    public init(appAppleIDs: [String: Int64] = [:], clock: @escaping @Sendable () -> Date = { Date() }) {
        self.appAppleIDs = appAppleIDs
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
                let customer = customerID ?? state.transactions[id]?.customerID
                    ?? state.transactions.values.first { $0.payload.originalTransactionId == original }?.customerID
                    ?? "customer-\(original)"
                state.sequence += 1
                state.transactions[id] = SimulatedTransaction(payload: transaction, customerID: customer, modifiedSequence: state.sequence)
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
        state.withLock { $0.notifications.append(notification) }
    }

    /// Forgets all data (not the CA or the key).
    public func reset() {
        state.withLock { $0 = State() }
    }

    /// Consumption reports received so far.
    public var receivedConsumption: [ReceivedConsumption] { state.withLock { $0.consumption } }

    // MARK: - Queries

    /// The stored transaction with `id` as transaction, original transaction or app transaction ID, in `bundleID`.
    public func transaction(anyID id: String, bundleID: String) -> SimulatedTransaction? {
        state.withLock { state in
            if let direct = state.transactions[id], direct.payload.bundleId == bundleID { return direct }
            return state.transactions.values
                .filter { $0.payload.bundleId == bundleID && ($0.payload.originalTransactionId == id || $0.payload.appTransactionId == id) }
                .min { $0.modifiedSequence < $1.modifiedSequence }
        }
    }

    /// Every transaction of a customer in an app, in modification order.
    public func transactions(customerID: String, bundleID: String) -> [SimulatedTransaction] {
        state.withLock { state in
            state.transactions.values.filter { $0.customerID == customerID && $0.payload.bundleId == bundleID }
                .sorted { $0.modifiedSequence < $1.modifiedSequence }
        }
    }

    /// The override of a subscription, if any.
    func subscriptionOverride(_ originalTransactionId: String) -> SimulatedSubscriptionOverride? {
        state.withLock { $0.subscriptionOverrides[originalTransactionId] }
    }

    /// Stored notifications of an app, oldest first.
    func notifications(bundleID: String) -> [SimulatedNotification] {
        state.withLock { $0.notifications.filter { $0.bundleID == bundleID }.sorted { $0.firstSentDate < $1.firstSentDate } }
    }
}

/// Seed data the simulator cannot hold.
public struct SimulatorInputError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
