import Crypto
import Foundation

/// Verified chains by exact JWS header bytes, bounded in count and age. Not thread-safe by itself;
/// the verifier keeps it in a `Mutex`.
///
/// A steady stream carries the same one or two headers (the `x5c` chain is ~3 KB of base64), so a
/// lookup compares the bytes with the most recently used entry first: one `memcmp`, no hashing of
/// the header, no `String` built from it.
struct ChainCache: Sendable {
    /// A class, so a hit hands out one reference instead of copying the chain's certificates.
    final class Entry: Sendable {
        let chain: ValidatedChain
        let leafKey: P256.Signing.PublicKey
        let validity: ClosedRange<Date>
        let insertedAt: Date
        /// SHA-256 state after `header.`: every JWS with this exact header shares that prefix of its
        /// signing input, so only the payload is hashed per JWS.
        let signingInputPrefix: SHA256

        init(
            chain: ValidatedChain,
            leafKey: P256.Signing.PublicKey,
            validity: ClosedRange<Date>,
            insertedAt: Date,
            signingInputPrefix: SHA256
        ) {
            self.chain = chain
            self.leafKey = leafKey
            self.validity = validity
            self.insertedAt = insertedAt
            self.signingInputPrefix = signingInputPrefix
        }
    }

    private var headers: [[UInt8]] = []
    private var entries: [Entry] = []
    private var mostRecent = 0
    private let maximumEntries: Int
    private let maximumAge: Double
    private(set) var statistics = ChainCacheStatistics()

    init(maximumEntries: Int, maximumAge: Double) {
        self.maximumEntries = maximumEntries
        self.maximumAge = maximumAge
    }

    /// The entry for exactly `header` if it is younger than the maximum age.
    mutating func lookup(_ header: UnsafeRawBufferPointer, now: Date) -> Entry? {
        guard let index = index(of: header) else {
            statistics.misses += 1
            return nil
        }
        let entry = entries[index]
        guard now.timeIntervalSince(entry.insertedAt) <= maximumAge, entry.insertedAt <= now else {
            remove(at: index)
            statistics.misses += 1
            return nil
        }
        mostRecent = index
        statistics.hits += 1
        return entry
    }

    mutating func insert(_ header: [UInt8], entry: Entry, now: Date) {
        if let existing = header.withUnsafeBytes({ index(of: $0) }) {
            entries[existing] = entry
            mostRecent = existing
            return
        }
        if entries.count >= maximumEntries {
            for index in entries.indices.reversed() where now.timeIntervalSince(entries[index].insertedAt) > maximumAge {
                remove(at: index)
            }
            while entries.count >= maximumEntries,
                let oldest = entries.indices.min(by: { entries[$0].insertedAt < entries[$1].insertedAt })
            {
                remove(at: oldest)
                statistics.evictions += 1
            }
        }
        headers.append(header)
        entries.append(entry)
        mostRecent = entries.count - 1
        statistics.entries = entries.count
    }

    mutating func removeAll() {
        headers.removeAll()
        entries.removeAll()
        mostRecent = 0
        statistics.entries = 0
    }

    /// The index of the entry whose header equals `header` byte for byte.
    private func index(of header: UnsafeRawBufferPointer) -> Int? {
        guard !headers.isEmpty else { return nil }
        if mostRecent < headers.count, Self.equal(headers[mostRecent], header) { return mostRecent }
        return headers.indices.first { $0 != mostRecent && Self.equal(headers[$0], header) }
    }

    private static func equal(_ stored: [UInt8], _ header: UnsafeRawBufferPointer) -> Bool {
        guard stored.count == header.count else { return false }
        guard !header.isEmpty else { return true }
        return stored.withUnsafeBytes { memcmp($0.baseAddress!, header.baseAddress!, header.count) == 0 }
    }

    private mutating func remove(at index: Int) {
        headers.remove(at: index)
        entries.remove(at: index)
        mostRecent = 0
        statistics.entries = entries.count
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
