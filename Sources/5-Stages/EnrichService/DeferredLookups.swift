import AppStoreServerAPI
import Foundation
import Synchronization

/// The turns the limiter gave deferred lookups, per purchase, until each comes.
///
/// A deferred record is set aside, but the records after it in its batch are looked up again in the
/// runtime's next pass, and the budget's records behind them in every later pass: without memory,
/// each pass would ask the limiter again and take a new, later turn for the same purchase, so a batch
/// of Sandbox records would spread its returns quadratically over time and leave budget unused. A
/// purchase whose turn has not come is deferred again to the same turn, without asking the limiter.
final class DeferredLookups: Sendable {
    private let turns = Mutex<[String: ContinuousClock.Instant]>([:])
    static let maximumEntries = 100_000

    /// Fails with the purchase's deferral while its turn has not come; then forgets it.
    func checkTurn(_ purchase: String, endpoint: String) throws(AppStoreAPIError) {
        let now = ContinuousClock.now
        let turn: ContinuousClock.Instant? = turns.withLock { turns in
            guard let turn = turns[purchase] else { return nil }
            if turn <= now {
                turns[purchase] = nil
                return nil
            }
            return turn
        }
        guard let turn else { return }
        throw AppStoreAPIError(
            .budgetDeferred, "the lookup of \(purchase) waits for the turn its budget gave it", retryAfter: turn - now, endpoint: endpoint)
    }

    /// Remembers the turn of a lookup the limiter deferred.
    func keep(_ purchase: String, after error: AppStoreAPIError) {
        guard error.isDeferral, let wait = error.retryAfter else { return }
        let turn = ContinuousClock.now + wait
        turns.withLock { turns in
            if turns.count >= Self.maximumEntries { turns.removeAll() }
            turns[purchase] = turn
        }
    }
}
