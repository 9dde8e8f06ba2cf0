/// A map bounded in count that forgets what was not used recently, in O(1) per operation.
///
/// Two generations of at most half the capacity each: new and recently read entries go to the young
/// one; when it is full it becomes the old one and the previous old one is dropped whole. So an
/// entry survives at least `capacity / 2` insertions after it was last inserted or read, and the
/// map never holds more than `capacity` entries — an approximate LRU without a linked list or a
/// per-entry timestamp. Not thread-safe by itself; keep it in a `Mutex`.
public struct GenerationalCache<Key: Hashable, Value> {
    /// Most entries held at once.
    public let capacity: Int
    private let generationSize: Int
    private var young: [Key: Value] = [:]
    private var old: [Key: Value] = [:]

    /// - Parameter capacity: Most entries held at once (at least 1).
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        generationSize = max(1, self.capacity / 2)
    }

    /// Entries held now.
    public var count: Int { young.count + old.count }

    /// The value for `key`, if held; a hit counts as a use (the entry moves to the young generation).
    public mutating func value(for key: Key) -> Value? {
        if let value = young[key] { return value }
        guard let value = old.removeValue(forKey: key) else { return nil }
        insertYoung(value, for: key)
        return value
    }

    /// Whether `key` is held, without counting as a use.
    public func contains(_ key: Key) -> Bool {
        young[key] != nil || old[key] != nil
    }

    /// Holds `value` for `key`, replacing any earlier value.
    public mutating func insert(_ value: Value, for key: Key) {
        old.removeValue(forKey: key)
        insertYoung(value, for: key)
    }

    /// Forgets `key`.
    public mutating func removeValue(forKey key: Key) {
        young.removeValue(forKey: key)
        old.removeValue(forKey: key)
    }

    /// Forgets everything.
    public mutating func removeAll() {
        young.removeAll()
        old.removeAll()
    }

    private mutating func insertYoung(_ value: Value, for key: Key) {
        if young[key] == nil, young.count >= generationSize {
            // With a capacity of 1 there is no room for an old generation.
            old = capacity >= 2 ? young : [:]
            young = [:]
        }
        young[key] = value
    }
}

extension GenerationalCache: Sendable where Key: Sendable, Value: Sendable {}
