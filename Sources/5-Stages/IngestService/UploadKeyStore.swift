import AsyncHTTPClient
import Foundation
import JWTKit
import LogKeys
import Logging
import NIOCore
import NIOHTTP1

/// The identity provider's public keys (a JWKS), cached. Refreshed when older than
/// ``JWTUploadSettings/refreshInterval`` (in the background, the old set answers meanwhile), and
/// fetched again at once, at most every ``JWTUploadSettings/refetchMinimumInterval``, when a
/// token names a key the cache lacks: so a key rotated in at the provider is accepted within
/// seconds, and made-up key IDs cost the provider almost nothing.
actor UploadKeyStore {
    /// The two algorithms accepted: RS256 and ES256 (P-256), what identity providers sign with.
    enum Algorithm: String, Sendable {
        case rs256 = "RS256"
        case es256 = "ES256"
    }

    /// One usable key: its own jwt-kit collection holding only it, so that verification can
    /// never fall back to another key of the set.
    struct Key: Sendable {
        let kid: String?
        let algorithm: Algorithm
        let collection: JWTKeyCollection
    }

    /// A parsed key set.
    struct KeySet: Sendable {
        var byKID: [String: Key]
        var withoutKID: [Key]
        var count: Int { byKID.count + withoutKID.count }

        /// The key a token names; a token without `kid` gets the set's only key of its algorithm.
        func key(kid: String?, algorithm: Algorithm) -> Key? {
            if let kid { return byKID[kid] }
            let candidates = (Array(byKID.values) + withoutKID).filter { $0.algorithm == algorithm }
            return candidates.count == 1 ? candidates[0] : nil
        }
    }

    /// Why a key set could not be used; `problem` completes "the JWKS …".
    struct LoadError: Error, Sendable, CustomStringConvertible {
        let problem: String
        var description: String { problem }
    }

    enum Lookup: Sendable {
        case found(Key)
        /// The set was loaded but has no such key, even after fetching it again (or it was
        /// fetched too recently to ask again).
        case unknown
        /// No key set could be loaded yet.
        case unavailable
    }

    private let source: JWTUploadSettings.KeySource
    private let refreshInterval: Duration
    private let refetchMinimumInterval: Duration
    private let httpClient: HTTPClient
    private let logger: Logger

    private var current: (keys: KeySet, loadedAt: ContinuousClock.Instant)?
    private var lastAttempt: ContinuousClock.Instant?
    private var loading: Task<Void, Never>?

    init(settings: JWTUploadSettings, httpClient: HTTPClient, logger: Logger) {
        source = settings.keys
        refreshInterval = settings.refreshInterval
        refetchMinimumInterval = settings.refetchMinimumInterval
        self.httpClient = httpClient
        self.logger = logger
    }

    /// Loads the set once unless it is loaded; used at start so a wrong URL shows in the log then.
    func prepare() async {
        if current == nil { await reload() }
    }

    /// The key for a token's header.
    func lookup(kid: String?, algorithm: Algorithm) async -> Lookup {
        if current == nil, mayFetch { await reload() }
        guard let loaded = current else { return .unavailable }
        if ContinuousClock.now - loaded.loadedAt > refreshInterval, mayFetch, loading == nil {
            loading = Task { await self.load() }
        }
        if let key = loaded.keys.key(kid: kid, algorithm: algorithm) { return .found(key) }
        guard mayFetch else { return .unknown }
        await reload()
        return current?.keys.key(kid: kid, algorithm: algorithm).map(Lookup.found) ?? .unknown
    }

    private var mayFetch: Bool {
        guard let lastAttempt else { return true }
        return ContinuousClock.now - lastAttempt >= refetchMinimumInterval
    }

    /// Loads again, or waits for the load in flight: concurrent requests share one fetch.
    private func reload() async {
        if let loading {
            await loading.value
            return
        }
        let task = Task { await self.load() }
        loading = task
        await task.value
    }

    private func load() async {
        lastAttempt = .now
        defer { loading = nil }
        do {
            let bytes: [UInt8]
            switch source {
            case .file(let path): bytes = try Self.readFile(path)
            case .url(let url): bytes = try await fetch(url)
            }
            let keys = try await Self.parse(bytes)
            current = (keys, .now)
            logger.info("upload keys loaded", metadata: [LogKey.uploadJWKS: "\(source)", LogKey.uploadJWKSKeys: "\(keys.count)"])
        } catch {
            // The old set, if any, keeps answering: a provider's outage must not refuse every upload.
            logger.warning("upload keys could not be loaded", metadata: [LogKey.uploadJWKS: "\(source)", LogKey.error: "\(error)"])
        }
    }

    private func fetch(_ url: URL) async throws(LoadError) -> [UInt8] {
        do {
            let response = try await httpClient.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(10))
            guard response.status == .ok else {
                throw LoadError(problem: "answered HTTP \(response.status.code)")
            }
            return Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)
        } catch let error as LoadError {
            throw error
        } catch {
            throw LoadError(problem: "could not be fetched: \(error)")
        }
    }

    static func readFile(_ path: String) throws(LoadError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw LoadError(problem: "cannot be read") }
        return Array(data)
    }

    /// A usable key read from a JWKS, before jwt-kit builds it.
    struct Entry: Sendable {
        let kid: String?
        let algorithm: Algorithm
        /// The JWK's public fields, with `kid` and `alg` set.
        let fields: [String: String]
    }

    /// The usable keys of a JWKS document: RSA keys for RS256 and P-256 keys for ES256, marked
    /// for signatures or unmarked. Others (encryption keys, other algorithms) are skipped, so a
    /// provider that publishes them as well still works. Synchronous, so configuration can check
    /// a file at start.
    static func entries(_ bytes: [UInt8]) throws(LoadError) -> [Entry] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
            let keys = object["keys"] as? [[String: Any]]
        else {
            throw LoadError(problem: "is not a JSON Web Key Set ({\"keys\": [...]})")
        }
        var entries: [Entry] = []
        var kids: Set<String> = []
        for (index, key) in keys.enumerated() {
            guard let (algorithm, publicFields) = usableFields(key) else { continue }
            let kid = key["kid"] as? String
            if let kid, !kids.insert(kid).inserted { continue }  // the first of a duplicated kid counts
            var fields = publicFields
            fields["kid"] = kid ?? "#\(index)"  // jwt-kit files keys by kid; tokens without one are matched by KeySet
            fields["alg"] = algorithm.rawValue
            entries.append(Entry(kid: kid, algorithm: algorithm, fields: fields))
        }
        guard !entries.isEmpty else { throw LoadError(problem: "has no usable RS256 or ES256 (P-256) signing key") }
        return entries
    }

    /// The key set of a JWKS document (see ``entries(_:)``); a key jwt-kit cannot build (a bad
    /// modulus, a point off the curve) is skipped like an unusable one.
    static func parse(_ bytes: [UInt8]) async throws(LoadError) -> KeySet {
        var set = KeySet(byKID: [:], withoutKID: [])
        for entry in try entries(bytes) {
            do {
                let jwk = try JSONDecoder().decode(JWK.self, from: try JSONSerialization.data(withJSONObject: entry.fields))
                let collection = JWTKeyCollection()
                try await collection.add(jwk: jwk)
                let key = Key(kid: entry.kid, algorithm: entry.algorithm, collection: collection)
                if let kid = entry.kid { set.byKID[kid] = key } else { set.withoutKID.append(key) }
            } catch {
                continue
            }
        }
        guard set.count > 0 else { throw LoadError(problem: "has no usable RS256 or ES256 (P-256) signing key") }
        return set
    }

    /// The public fields of a usable key, and its algorithm.
    private static func usableFields(_ entry: [String: Any]) -> (Algorithm, [String: String])? {
        if let use = entry["use"] as? String, use != "sig" { return nil }
        let declared = entry["alg"] as? String
        switch entry["kty"] as? String {
        case "RSA":
            guard declared == nil || declared == Algorithm.rs256.rawValue,
                let n = entry["n"] as? String, let e = entry["e"] as? String
            else { return nil }
            return (.rs256, ["kty": "RSA", "n": n, "e": e])
        case "EC":
            guard declared == nil || declared == Algorithm.es256.rawValue, entry["crv"] as? String == "P-256",
                let x = entry["x"] as? String, let y = entry["y"] as? String
            else { return nil }
            return (.es256, ["kty": "EC", "crv": "P-256", "x": x, "y": y])
        default:
            return nil
        }
    }
}
