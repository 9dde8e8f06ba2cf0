import Foundation
import Synchronization

/// One request token per key and app, reused until it nears its expiry, as Apple advises
/// ("reuse the same signed token for up to 60 minutes"): signing an ES256 token for every request
/// cost the client a signature and Apple's side a verification per call.
///
/// A token is replaced once half its lifetime has passed, so one in use has at least half of it
/// left however long a request waits, and as soon as Apple answered 401 with it.
final class RequestTokenCache: Sendable {
    struct Entry {
        let token: String
        let issuedAt: Date
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let signedCount = Atomic<Int>(0)

    var signed: Int { signedCount.load(ordering: .relaxed) }

    /// The cached token while `now` is within the first half of its lifetime (and not before it
    /// was issued: a clock set back), else a new one.
    func token(for credentials: AppStoreAPICredentials, now: Date, lifetime: Duration) throws(AppStoreAPIError) -> String {
        let key = Self.key(credentials)
        let halfLife = Double(min(lifetime, RequestToken.maximumLifetime).components.seconds) / 2
        if let entry = entries.withLock({ $0[key] }), now >= entry.issuedAt, now < entry.issuedAt.addingTimeInterval(halfLife) {
            return entry.token
        }
        let token = try RequestToken.make(credentials: credentials, now: now, lifetime: lifetime)
        signedCount.add(1, ordering: .relaxed)
        entries.withLock { $0[key] = Entry(token: token, issuedAt: now) }
        return token
    }

    /// Forgets the token of `credentials` (Apple refused it).
    func discard(_ credentials: AppStoreAPICredentials) {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(credentials)) }
    }

    private static func key(_ credentials: AppStoreAPICredentials) -> String {
        "\(credentials.issuerID)\u{0}\(credentials.keyID)\u{0}\(credentials.bundleId)"
    }
}
