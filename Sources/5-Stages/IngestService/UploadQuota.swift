import Foundation
import Synchronization

/// How many uploads one authenticated user may make (`POST /v1/transactions` and `/v1/receipts`
/// share it): a token bucket per user, `perMinute` refilled and `burst` deep, so an app restoring
/// a long purchase history gets through while one signed-in account flooding the broker gets 429
/// with `Retry-After`. Per ingest process: with N replicas a user gets up to N times the rate.
/// Open uploads (`INGEST_UPLOAD_AUTH=none`) have no user to count; the gateway's per-address
/// limit bounds them.
final class UploadQuota: Sendable {
    struct Settings: Sendable, Hashable {
        /// Uploads a user regains per minute; 0 turns the quota off.
        var perMinute: Int
        /// Uploads a user may make at once.
        var burst: Int

        static let off = Settings(perMinute: 0, burst: 0)
    }

    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    let settings: Settings
    /// Users kept before the full buckets are dropped (a full bucket is what a new user gets).
    let maximumUsers: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let buckets = Mutex<[String: Bucket]>([:])

    init(settings: Settings, maximumUsers: Int = 100_000, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.settings = settings
        self.maximumUsers = maximumUsers
        self.now = now
    }

    /// Takes one upload from `user`'s bucket, or throws 429 with how long until one is back.
    func take(_ user: String) throws(IngestError) {
        guard settings.perMinute > 0 else { return }
        let rate = Double(settings.perMinute) / 60
        let capacity = Double(max(settings.burst, 1))
        let instant = now()
        let wait: Duration? = buckets.withLock { buckets in
            var bucket = buckets[user] ?? Bucket(tokens: capacity, at: instant)
            bucket.tokens = min(capacity, bucket.tokens + Self.seconds(instant - bucket.at) * rate)
            bucket.at = instant
            defer {
                buckets[user] = bucket
                if buckets.count > maximumUsers { Self.dropFull(&buckets, capacity: capacity, rate: rate, now: instant) }
            }
            guard bucket.tokens >= 1 else { return .seconds((1 - bucket.tokens) / rate) }
            bucket.tokens -= 1
            return nil
        }
        if let wait { throw IngestError.userRateLimited(retryAfterSeconds: max(1, Int(Self.seconds(wait).rounded(.up)))) }
    }

    /// How many users' buckets are kept (bounded by ``maximumUsers`` plus the ones not yet full).
    var trackedUsers: Int { buckets.withLock { $0.count } }

    /// Counts an upload against its authenticated user, once: a token's user (jwt) as soon as the
    /// token is checked (`identity` nil), so junk bodies count too; the user a backend's HMAC
    /// vouches for once the body has named them, before the chain pre-check, so junk counts there
    /// too. Open uploads only claim a user: not counted.
    func take(for credential: UploadCredential, identity: UploadIdentity?) throws(IngestError) {
        switch credential.mode {
        case .jwt:
            if identity == nil, let user = credential.tokenUser { try take(user) }
        case .hmac:
            if let user = identity?.userId { try take(user) }
        case .none:
            return
        }
    }

    /// Users whose bucket has refilled lose nothing by being forgotten.
    private static func dropFull(_ buckets: inout [String: Bucket], capacity: Double, rate: Double, now: ContinuousClock.Instant) {
        buckets = buckets.filter { $0.value.tokens + seconds(now - $0.value.at) * rate < capacity }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
