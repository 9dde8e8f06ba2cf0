import AppStore
import Synchronization

/// JWS the simulator has already signed, by what they say.
///
/// Signing (an ES256 signature over freshly encoded JSON) was the simulator's main cost: enrich
/// fetches whole history pages, and every transaction of every page was signed again on every
/// answer. Each entry keeps the content it signed (with `signedDate` cleared), so a lookup hits only
/// when the data is unchanged and any change — a refund, an extension, a renewal-info override, a
/// status that turned with the clock — is signed anew. A version's `signedDate` is therefore when
/// it was first signed, not when it was last served. Apple re-signs per answer and grant orders
/// lookups by the newest `signedDate` in them, so every answer also carries at least one JWS signed
/// as it is made (each purchase's last transaction on a history page, each status's renewal info).
///
/// Bounded by AppStore's `GenerationalCache`: about the `capacity` most recently used entries.
final class SignedJWSCache<Content: Hashable & Sendable>: Sendable {
    struct Entry: Sendable {
        var content: Content
        var jws: String
    }

    private let entries: Mutex<GenerationalCache<String, Entry>>

    init(capacity: Int) {
        precondition(capacity > 0, "a cache holds at least one entry")
        entries = Mutex(GenerationalCache(capacity: 2 * capacity))
    }

    /// The JWS signed for `key` when its content was `content`, if it is still held.
    func jws(for key: String, content: Content) -> String? {
        entries.withLock { cache in
            guard let entry = cache.value(for: key), entry.content == content else { return nil }
            return entry.jws
        }
    }

    /// Keeps `jws` for `key` and `content` and returns what answers must carry: the JWS another
    /// caller stored meanwhile for the same content (two concurrent first answers then agree), else
    /// `jws`.
    func store(_ jws: String, for key: String, content: Content) -> String {
        entries.withLock { cache in
            if let entry = cache.value(for: key), entry.content == content { return entry.jws }
            cache.insert(Entry(content: content, jws: jws), for: key)
            return jws
        }
    }

    /// Entries held.
    var count: Int { entries.withLock { $0.count } }

    func removeAll() {
        entries.withLock { $0.removeAll() }
    }
}
