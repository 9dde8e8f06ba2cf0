import AppStoreServerAPI
import Foundation
import Synchronization

extension SimulatorStore {
    /// Appends one delivery attempt to a stored notification, as Apple's notification history shows
    /// it (`sendAttempts`). Returns false when no notification has that UUID.
    @discardableResult
    public func recordSendAttempt(notificationUUID: String, result: String, at date: Date) -> Bool {
        state.withLock { state in
            guard let index = state.notificationIndexByUUID[notificationUUID] else { return false }
            state.notifications[index].sendAttempts.append(SendAttemptItem(attemptDate: date, sendAttemptResult: result))
            return true
        }
    }
}
