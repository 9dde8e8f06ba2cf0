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

    public func signedTransaction(_ transactionId: String) async throws -> String {
        try apple.signedTransaction(transactionId, bundleId: bundleId)
    }

    public func recordAttempt(notificationUUID: String, result: String, at date: Date) async {
        apple.store.recordSendAttempt(notificationUUID: notificationUUID, result: result, at: date)
    }
}
