import Foundation
import SimulatedCustomers

/// What the player needs from the simulated Apple: its records change as each step says, and it
/// signs what it sends. The simulator implements it over its in-memory store.
public protocol LifecycleRecords: Sendable {
    /// Applies Apple-side changes for `customerID`'s account.
    func apply(_ mutations: [AppleMutation], customerID: String) async throws
    /// Builds and signs the notification from the records as they are now, dated `signedAt`, and
    /// keeps it for notification history. Returns its UUID and the `signedPayload`.
    func sign(_ notification: NotificationSpec, signedAt: Date) async throws -> (notificationUUID: String, signedPayload: String)
    /// The transaction signed as the app received it from StoreKit at `signedAt` (for an app upload).
    func signedTransaction(_ transactionId: String, signedAt: Date) async throws -> String
    /// A StoreKit 1 app receipt (base64) listing the transaction, as an old app version holds it.
    func appReceipt(_ transactionId: String) async throws -> String
    /// Notes one delivery attempt's result (`SUCCESS`, `NO_RESPONSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`,
    /// `TIMED_OUT`, …) for notification history.
    func recordAttempt(notificationUUID: String, result: String, at: Date) async
}
