import Crypto
import Foundation

/// Verified chains by exact JWS header bytes, bounded in count and age. Not thread-safe by itself;
/// the verifier keeps it in a `Mutex`.
struct ChainCache: Sendable {
    struct Entry: Sendable {
        let chain: ValidatedChain
        let leafKey: P256.Signing.PublicKey
        let validity: ClosedRange<Date>
        let insertedAt: Date
    }

    private var entries: [String: Entry] = [:]
    private let maximumEntries: Int
    private let maximumAge: Double
    private(set) var statistics = ChainCacheStatistics()

    init(maximumEntries: Int, maximumAge: Double) {
        self.maximumEntries = maximumEntries
        self.maximumAge = maximumAge
    }

    /// The entry for `header` if it is younger than the maximum age.
    mutating func lookup(_ header: String, now: Date) -> Entry? {
        guard let entry = entries[header] else {
            statistics.misses += 1
            return nil
        }
        guard now.timeIntervalSince(entry.insertedAt) <= maximumAge, entry.insertedAt <= now else {
            entries[header] = nil
            statistics.entries = entries.count
            statistics.misses += 1
            return nil
        }
        statistics.hits += 1
        return entry
    }

    mutating func insert(_ header: String, entry: Entry, now: Date) {
        if entries[header] == nil, entries.count >= maximumEntries {
            entries = entries.filter { now.timeIntervalSince($0.value.insertedAt) <= maximumAge }
            while entries.count >= maximumEntries,
                let oldest = entries.min(by: { $0.value.insertedAt < $1.value.insertedAt })?.key
            {
                entries[oldest] = nil
                statistics.evictions += 1
            }
        }
        entries[header] = entry
        statistics.entries = entries.count
    }

    mutating func removeAll() {
        entries.removeAll()
        statistics.entries = 0
    }
}

/// Counters of the chain cache, for metrics and benchmarks.
public struct ChainCacheStatistics: Hashable, Sendable {
    /// JWS whose chain came from the cache.
    public var hits = 0
    /// JWS whose chain was not cached (or too old).
    public var misses = 0
    /// Chains dropped because the cache was full.
    public var evictions = 0
    /// Chains currently cached.
    public var entries = 0

    public init() {}
}
