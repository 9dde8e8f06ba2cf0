import Foundation
import KafkaClient

extension PartitionWorker {
    /// How often, and since when, one record failed.
    struct FailureHistory: Sendable {
        var attempts = 0
        var firstFailure: ContinuousClock.Instant?
        var lastFailure: ContinuousClock.Instant?
        /// The wall-clock time of the first failure, for the dead letter's header.
        var firstFailureDate: Date?
    }

    /// Records set aside after a failure of their own, so that the rest of the partition moves on.
    ///
    /// A record that fails transiently while the rest of the stage makes progress (one purchase Apple
    /// answers 5xx for) is parked: tried again on its own schedule, between batches, until it
    /// succeeds or the retry cap dead-letters it. Every later record with the same key is held behind
    /// it, so no key's order changes; other keys go on. The offset stored for the partition never
    /// passes the lowest record not finished, so a crash or rebalance redoes from there (a repeat
    /// downstream is a duplicate, which every consumer drops). Parked and held records together are
    /// bounded: when full, the worker takes no new batch until a parked record ends, and the buffer
    /// fills and pauses the partition as it would behind a record retried in place.
    ///
    /// Touched only by the worker's task.
    struct Parking {
        struct Entry {
            var record: KafkaMessage
            var history: FailureHistory
            var due: ContinuousClock.Instant
            /// The later records with the same key, in order.
            var held: [KafkaMessage] = []
        }

        /// In offset order.
        private(set) var entries: [Entry] = []
        /// Records taken out of ``entries`` to be tried again, not finished yet.
        private var retrying: [Int64] = []
        /// The highest offset finished while any record was parked or being retried.
        private var finishedThrough: Int64?
        /// The last offset given to store (the next one to read).
        private var stored: Int64?
        /// Parked and held records, at most ``capacity``.
        private(set) var count = 0
        let capacity: Int

        init(capacity: Int) {
            self.capacity = capacity
        }

        var isEmpty: Bool { entries.isEmpty && retrying.isEmpty }
        var isFull: Bool { capacity > 0 && count >= capacity }
        var canPark: Bool { capacity > 0 && count < capacity }
        var nextDue: ContinuousClock.Instant? { entries.map(\.due).min() }

        /// Holds `message` behind the parked record with its key; false when none has that key.
        mutating func holdIfBlocked(_ message: KafkaMessage) -> Bool {
            guard let index = entries.firstIndex(where: { $0.record.key == message.key }) else { return false }
            entries[index].held.append(message)
            retrying.removeAll { $0 == message.offset }
            count += 1
            return true
        }

        mutating func park(_ message: KafkaMessage, history: FailureHistory, due: ContinuousClock.Instant) {
            let entry = Entry(record: message, history: history, due: due)
            entries.insert(entry, at: entries.firstIndex { $0.record.offset > message.offset } ?? entries.endIndex)
            retrying.removeAll { $0 == message.offset }
            count += 1
        }

        /// The first parked record whose time has come and those held behind it, taken out to be
        /// tried again (they count as unfinished until ``finished(_:)``).
        mutating func takeDue(now: ContinuousClock.Instant = .now) -> (records: [KafkaMessage], history: FailureHistory)? {
            guard let index = entries.firstIndex(where: { $0.due <= now }) else { return nil }
            let entry = entries.remove(at: index)
            let records = [entry.record] + entry.held
            retrying.append(contentsOf: records.map(\.offset))
            count -= records.count
            return (records, entry.history)
        }

        /// `offset` finished (delivered or dead-lettered); returns the next offset to store when the
        /// lowest unfinished one moved.
        mutating func finished(_ offset: Int64) -> Int64? {
            retrying.removeAll { $0 == offset }
            finishedThrough = max(finishedThrough ?? offset, offset)
            return advance()
        }

        /// The records taken by ``takeDue(now:)`` that neither finished nor were parked or held again
        /// (the worker stopped): unfinished still, so the stored offset stays below them.
        mutating func advance() -> Int64? {
            let lowestUnfinished = (entries.map(\.record.offset) + retrying).min()
            guard let next = lowestUnfinished ?? finishedThrough.map({ $0 + 1 }) else { return nil }
            if isEmpty { finishedThrough = nil }
            guard next > (stored ?? -1) else { return nil }
            stored = next
            return next
        }
    }
}
