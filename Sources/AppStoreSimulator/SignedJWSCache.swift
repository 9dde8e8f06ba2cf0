import Synchronization

/// JWS the simulator has already signed, by what they say.
///
/// Signing (an ES256 signature over freshly encoded JSON) was the simulator's main cost: enrich
/// fetches whole history pages, and every transaction of every page was signed again on every
/// answer. Each entry keeps the content it signed (with `signedDate` cleared), so a lookup hits only
/// when the data is unchanged and any change — a refund, an extension, a renewal-info override, a
/// status that turned with the clock — is signed anew. A version's `signedDate` is therefore when
/// it was first signed, not when it was last served (Apple re-signs per answer; nothing in the
/// pipeline depends on that).
///
/// Bounded: two generations of at most `capacity` entries each; when the current one fills, the
/// older is dropped, and an entry used since moves to the current one.
final class SignedJWSCache<Content: Hashable & Sendable>: Sendable {
    struct Entry: Sendable {
        var content: Content
        var jws: String
    }

    struct Generations: Sendable {
        var current: [String: Entry] = [:]
        var previous: [String: Entry] = [:]
    }

    let capacity: Int
    private let generations = Mutex(Generations())

    init(capacity: Int) {
        precondition(capacity > 0, "a cache holds at least one entry")
        self.capacity = capacity
    }

    /// The JWS signed for `key` when its content was `content`, if it is still held.
    func jws(for key: String, content: Content) -> String? {
        generations.withLock { g in
            if let entry = g.current[key] { return entry.content == content ? entry.jws : nil }
            guard let entry = g.previous.removeValue(forKey: key), entry.content == content else { return nil }
            Self.insert(entry, for: key, into: &g, capacity: capacity)
            return entry.jws
        }
    }

    /// Keeps `jws` for `key` and `content` and returns what answers must carry: the JWS another
    /// caller stored meanwhile for the same content (two concurrent first answers then agree), else
    /// `jws`.
    func store(_ jws: String, for key: String, content: Content) -> String {
        generations.withLock { g in
            if let entry = g.current[key] ?? g.previous[key], entry.content == content { return entry.jws }
            g.previous[key] = nil
            Self.insert(Entry(content: content, jws: jws), for: key, into: &g, capacity: capacity)
            return jws
        }
    }

    /// Entries held, both generations.
    var count: Int { generations.withLock { $0.current.count + $0.previous.count } }

    func removeAll() {
        generations.withLock { $0 = Generations() }
    }

    private static func insert(_ entry: Entry, for key: String, into g: inout Generations, capacity: Int) {
        if g.current[key] == nil, g.current.count >= capacity {
            g.previous = g.current
            g.previous[key] = nil
            g.current = [:]
        }
        g.current[key] = entry
    }
}
