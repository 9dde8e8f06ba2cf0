import AppStore
import AppStoreSimulator
import Foundation
import SimulatedCustomers
import SimulatedDelivery

/// The simulated Apple as the lifecycle player's records: each step changes the simulator's store,
/// and notifications are signed by its CA and kept for notification history.
public struct SimulatorLifecycleRecords: LifecycleRecords {
    public let apple: SimulatedApple
    public let bundleId: String

    public init(apple: SimulatedApple, bundleId: String) {
        self.apple = apple
        self.bundleId = bundleId
    }

    public func apply(_ mutations: [AppleMutation], customerID: String) async throws {
        for mutation in mutations {
            switch mutation {
            case .transaction(let transaction):
                try apple.store.upsert([transaction], customerID: customerID)
            case .subscription(let originalTransactionId, let status, let renewalInfo):
                apple.store.setSubscription(originalTransactionId, SimulatedSubscriptionOverride(status: status, renewalInfo: renewalInfo))
            case .historyNotVisible(let transactionId, let lookups):
                apple.faults.hideHistory(of: transactionId, lookups: lookups)
            }
        }
    }

    public func sign(_ notification: NotificationSpec, signedAt: Date) async throws -> (notificationUUID: String, signedPayload: String) {
        let recorded = try apple.notifications.record(
            SeedNotificationRequest(
                bundleId: bundleId, notificationType: notification.type, subtype: notification.subtype,
                transactionId: notification.transactionId, sentDate: signedAt, sendAttemptResults: [],
                consumptionRequestReason: notification.consumptionRequestReason))
        return (recorded.notificationUUID, recorded.signedPayload)
    }

    public func signedTransaction(_ transactionId: String, signedAt: Date) async throws -> String {
        try apple.signedTransaction(transactionId, bundleId: bundleId, signedAt: signedAt)
    }

    public func appReceipt(_ transactionId: String) async throws -> String {
        guard let transaction = apple.store.transaction(anyID: transactionId, bundleId: bundleId)?.payload else {
            throw SimulatorInputError("no transaction \(transactionId) to list in a receipt")
        }
        return try SimulatedReceipt.appReceipt(bundleId: bundleId, transactions: [transaction])
    }

    public func recordAttempt(notificationUUID: String, result: String, at date: Date) async {
        apple.store.recordSendAttempt(notificationUUID: notificationUUID, result: result, at: date)
    }
}
