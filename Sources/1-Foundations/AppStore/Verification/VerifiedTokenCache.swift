import Crypto
import Foundation

/// Whether a verifier remembers whole JWS it has verified, so the same token is not verified again.
///
/// The App Store Server API returns a purchase's unchanged transactions byte for byte on every
/// lookup; a client that looks the same purchase up again would otherwise check every signature of
/// every history page again. A remembered token skips parsing, the signature check and decoding,
/// never the rules that depend on the moment or the caller: the chain must still be valid at the
/// validation time computed now, no older than the chain cache's maximum age (the revocation
/// lifetime with online checks), and the caller's identity checks (bundle ID, environment, app,
/// Production on Apple's root) run on every hit as on a first check. Off by default: a stream of
/// distinct notifications (verify) gains nothing from it.
public struct VerifiedTokenCachePolicy: Hashable, Sendable {
    /// Whether tokens are remembered; only honoured while the chain cache is enabled (a disabled
    /// chain cache asks for every chain to be validated).
    public var isEnabled: Bool
    /// Most tokens remembered; the least recently used are forgotten first.
    public var maximumEntries: Int

    public init(isEnabled: Bool = true, maximumEntries: Int = 10_000) {
        self.isEnabled = isEnabled && maximumEntries > 0
        self.maximumEntries = max(1, maximumEntries)
    }

    /// Nothing remembered (the default).
    public static let disabled = VerifiedTokenCachePolicy(isEnabled: false)
}

/// Counters of the verified-token cache, for tests and metrics.
public struct VerifiedTokenCacheStatistics: Hashable, Sendable {
    /// Tokens answered from the cache (no signature checked, nothing decoded).
    public var hits = 0
    /// Tokens verified in full while the cache was on.
    public var misses = 0
    /// Remembered tokens found no longer acceptable at the current validation time or age, and
    /// verified in full again.
    public var stale = 0
    /// Tokens remembered now.
    public var entries = 0

    public init() {}
}

/// Verified tokens by the SHA-256 of their exact UTF-8 bytes: a token differing in any byte (header,
/// payload or signature) is another key. Not thread-safe by itself; the verifier keeps it in a `Mutex`.
struct VerifiedTokenCache: Sendable {
    /// A class, so a hit hands out references instead of copying a decoded payload.
    final class Entry: Sendable {
        /// The decoded payload (its type is checked on every hit).
        let payload: any Sendable
        /// The chain it was verified with: its validity window and age decide whether a hit holds.
        let chain: ChainCache.Entry
        /// The kind the payload was checked to be, when the first check asked for one.
        let checkedKind: SignedDataKind?

        init(payload: any Sendable, chain: ChainCache.Entry, checkedKind: SignedDataKind?) {
            self.payload = payload
            self.chain = chain
            self.checkedKind = checkedKind
        }
    }

    private var entries: GenerationalCache<SHA256Digest, Entry>
    private(set) var statistics = VerifiedTokenCacheStatistics()

    init(maximumEntries: Int) {
        entries = GenerationalCache(capacity: maximumEntries)
    }

    /// The key of a token: the SHA-256 of its exact bytes, read in place.
    static func key(of token: String) -> SHA256Digest {
        if let digest = token.utf8.withContiguousStorageIfAvailable({ SHA256.hash(data: UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return SHA256.hash(data: Array(token.utf8))
    }

    /// The entry for `key` if `holds` accepts it; an entry it refuses is forgotten and counted stale.
    mutating func lookup(_ key: SHA256Digest, holds: (Entry) -> Bool) -> Entry? {
        guard let entry = entries.value(for: key) else {
            statistics.misses += 1
            return nil
        }
        guard holds(entry) else {
            entries.removeValue(forKey: key)
            statistics.stale += 1
            statistics.misses += 1
            statistics.entries = entries.count
            return nil
        }
        statistics.hits += 1
        return entry
    }

    mutating func insert(_ key: SHA256Digest, entry: Entry) {
        entries.insert(entry, for: key)
        statistics.entries = entries.count
    }

    mutating func removeAll() {
        entries.removeAll()
        statistics.entries = 0
    }
}
