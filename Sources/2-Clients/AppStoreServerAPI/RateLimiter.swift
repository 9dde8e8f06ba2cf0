import AppStore
import Foundation
import Synchronization

/// How fast the client may call Apple.
///
/// Apple counts per app and endpoint and enforces hourly, whichever process calls. The limiter
/// allows each (key, bundle ID, environment, endpoint) ``scale`` × Apple's documented rate ×
/// ``share`` × this process's ``RateLimiter/part`` of that, with bursts of ``burst`` worth of
/// requests, and makes callers wait when they are ahead, except that a Sandbox request may be
/// deferred instead (``sandboxMaximumWait``). A scale above 1 is only sensible against the simulator.
public struct RateLimitPolicy: Hashable, Sendable {
    /// Share of Apple's documented limit to use (0.9 keeps a margin below it).
    public var scale: Double
    /// How much of the rate may be spent at once: `burst` seconds' worth of requests.
    public var burst: Duration
    /// False turns the limiter off (tests of Apple's own 429 handling).
    public var isEnabled: Bool
    /// The part (0…1) of each app's budget for ``sharedEndpoints`` that the processes sharing this
    /// configuration spend together (`APPSTORE_API_JOBS_SHARE` splits it between enrich and the
    /// recovery jobs); each process spends its ``RateLimiter/part`` of it. Other endpoints have
    /// one caller, which has their whole budget.
    public var share: Double
    /// The longest a Sandbox request waits for its budget; a longer wait throws
    /// ``RateLimiter/Deferral`` instead, so that enrich sets the record aside and a Sandbox burst
    /// (10 % of Production's limits) never holds up the Production records batched with it.
    /// `nil`: Sandbox requests wait like any other (appstorectl's jobs).
    public var sandboxMaximumWait: Duration?

    /// The endpoints enrich calls, whose budgets it shares with appstorectl's jobs.
    public static let sharedEndpoints: Set<AppStoreAPIEndpoint> = [.transactionHistory, .subscriptionStatuses, .transactionInfo]

    /// ``share`` for the endpoints enrich shares with the jobs, the whole budget for the others.
    public func share(for endpoint: AppStoreAPIEndpoint) -> Double {
        Self.sharedEndpoints.contains(endpoint) ? share : 1
    }

    public init(
        scale: Double = 0.9, burst: Duration = .seconds(10), isEnabled: Bool = true, share: Double = 1, sandboxMaximumWait: Duration? = nil
    ) {
        self.sandboxMaximumWait = sandboxMaximumWait
        self.scale = scale
        self.burst = burst
        self.isEnabled = isEnabled
        self.share = min(1, max(0, share))
    }

    /// The longest a request in `environment` may wait before it is deferred; nil: no limit.
    public func maximumWait(in environment: AppStoreEnvironment) -> Duration? {
        environment == .sandbox ? sandboxMaximumWait : nil
    }

    /// Requests per second the whole budget allows for `endpoint` in `environment`.
    public func rate(for endpoint: AppStoreAPIEndpoint, in environment: AppStoreEnvironment) -> Double {
        max(0.001, endpoint.documentedLimit(in: environment) * scale)
    }
}

/// A client-side limiter per key: a generic cell-rate algorithm over reservations, so concurrent
/// callers queue in arrival order without a background task. When Apple answers 429 anyway (its
/// limits are shared with other processes and may change), ``holdOff(keyID:bundleId:environment:endpoint:for:)``
/// stops the bucket until Apple's `Retry-After` and restarts it without a burst, so callers do
/// not stampede back at the same instant.
///
/// A request that would wait longer than the policy's ``RateLimitPolicy/maximumWait(in:)`` spends
/// nothing and throws ``Deferral``, whose `retryAfter` is a turn of its own: deferred requests are
/// told to come back one interval apart, each when the bucket should have room, so a burst of them
/// returns spread over the budget rather than all at the next free slot.
public final class RateLimiter: Sendable {
    struct BucketKey: Hashable {
        var keyID: String
        var bundleId: String
        var environment: String
        var endpoint: AppStoreAPIEndpoint
    }

    /// A request was not sent: its budget has no room within the wait allowed (``RateLimitPolicy/maximumWait(in:)``).
    public struct Deferral: Error, Sendable {
        /// The endpoint whose budget had no room.
        public let endpoint: AppStoreAPIEndpoint
        /// When to ask again: this request's turn among those deferred.
        public let retryAfter: Duration
    }

    public let policy: RateLimitPolicy
    /// The theoretical arrival time of the next request per bucket, in seconds on the monotonic clock.
    private let next = Mutex<[BucketKey: Double]>([:])
    /// Per bucket, the turn given to the last deferred request (same clock).
    private let turns = Mutex<[BucketKey: Double]>([:])
    /// Until when (same clock) Apple asked a bucket to wait.
    private let holds = Mutex<[BucketKey: Double]>([:])
    private let start = ContinuousClock.now
    private let waits = Atomic<Int>(0)
    private let deferrals = Atomic<Int>(0)
    /// This process's part of ``RateLimitPolicy/share`` (bit pattern of a Double in 0…1).
    private let partBits = Atomic<UInt64>(1.0.bitPattern)

    public init(policy: RateLimitPolicy) {
        self.policy = policy
    }

    /// How many waits so far: one per request that had to wait its turn, and one per 100 ms a
    /// request waits while this process's ``part`` is 0.
    public var throttledRequests: Int { waits.load(ordering: .relaxed) }

    /// How many requests (or checks for room) were deferred so far, each given a turn.
    public var deferredRequests: Int { deferrals.load(ordering: .relaxed) }

    /// This process's part (0…1) of ``RateLimitPolicy/share``; 1 until ``setPart(_:)``.
    public var part: Double { Double(bitPattern: partBits.load(ordering: .relaxed)) }

    /// Spends `part` (clamped to 0…1) of the policy's share from now on. Enrich sets it to the part
    /// of its input's partitions it owns whenever its assignment changes, so its replicas together
    /// stay within one budget however many run. At 0 requests wait until a part is given.
    public func setPart(_ part: Double) {
        partBits.store(min(1, max(0, part)).bitPattern, ordering: .relaxed)
    }

    /// The part of each app's budget for `endpoint` this process spends now.
    func spent(_ endpoint: AppStoreAPIEndpoint) -> Double { policy.share(for: endpoint) * part }

    /// Waits until a request of `endpoint` for this key may be sent.
    /// - Throws: ``Deferral`` when the wait would pass ``RateLimitPolicy/maximumWait(in:)``
    ///   (nothing is spent); `CancellationError` when cancelled while waiting.
    public func acquire(
        keyID: String, bundleId: String, environment: AppStoreEnvironment, endpoint: AppStoreAPIEndpoint
    ) async throws {
        let key = BucketKey(keyID: keyID, bundleId: bundleId, environment: environment.rawValue, endpoint: endpoint)
        while policy.isEnabled, spent(endpoint) <= 0 {
            if let maximumWait = policy.maximumWait(in: environment) {
                throw Deferral(endpoint: endpoint, retryAfter: max(maximumWait, .milliseconds(100)))
            }
            waits.add(1, ordering: .relaxed)
            try await Task.sleep(for: .milliseconds(100))
        }
        let wait = try reserve(key, in: environment, spend: true)
        if wait > 0 {
            waits.add(1, ordering: .relaxed)
            try await Task.sleep(for: .nanoseconds(Int64(wait * 1e9)))
        }
    }

    /// Throws ``Deferral`` when a request of any of `endpoints` would be deferred now; spends nothing.
    /// A caller about to send several requests at once (a history and a status) checks first, so
    /// that one deferred request does not waste the budget the others spent.
    public func checkRoom(
        keyID: String, bundleId: String, environment: AppStoreEnvironment, endpoints: [AppStoreAPIEndpoint]
    ) throws(Deferral) {
        guard policy.isEnabled, let maximumWait = policy.maximumWait(in: environment) else { return }
        for endpoint in endpoints {
            if spent(endpoint) <= 0 { throw Deferral(endpoint: endpoint, retryAfter: max(maximumWait, .milliseconds(100))) }
            let key = BucketKey(keyID: keyID, bundleId: bundleId, environment: environment.rawValue, endpoint: endpoint)
            _ = try reserve(key, in: environment, spend: false)
        }
    }

    /// The wait before a request of `key` may leave, its slot reserved when `spend`; a wait over the
    /// bucket's maximum throws ``Deferral`` with the next deferred turn and reserves nothing.
    private func reserve(_ key: BucketKey, in environment: AppStoreEnvironment, spend: Bool) throws(Deferral) -> Double {
        let now = seconds()
        var wait: Double = 0
        if let hold = holds.withLock({ $0[key] }), hold > now { wait = hold - now }
        guard policy.isEnabled else { return wait }
        let interval = 1 / (policy.rate(for: key.endpoint, in: environment) * spent(key.endpoint))
        let tolerance = max(0, toSeconds(policy.burst) - interval)
        let maximumWait = policy.maximumWait(in: environment).map(toSeconds)
        let deferredTurn: Double? = next.withLock { table in
            let theoretical = max(table[key] ?? now, now)
            wait = max(wait, theoretical - tolerance - now)
            if let maximumWait, wait > maximumWait {
                // Come back when this bucket has room, one interval after the last deferred request.
                return turns.withLock { turns in
                    let turn = max(turns[key] ?? 0, now + wait)
                    turns[key] = turn + interval
                    return turn
                }
            }
            if spend { table[key] = theoretical + interval }
            return nil
        }
        if let deferredTurn {
            deferrals.add(1, ordering: .relaxed)
            throw Deferral(endpoint: key.endpoint, retryAfter: .nanoseconds(Int64((deferredTurn - now) * 1e9)))
        }
        return wait
    }

    /// Apple answered 429 with `Retry-After`: no request of this bucket leaves before then, and the
    /// rate restarts from that moment without a burst.
    public func holdOff(
        keyID: String, bundleId: String, environment: AppStoreEnvironment, endpoint: AppStoreAPIEndpoint, for wait: Duration
    ) {
        let key = BucketKey(keyID: keyID, bundleId: bundleId, environment: environment.rawValue, endpoint: endpoint)
        let until = seconds() + toSeconds(wait)
        holds.withLock { $0[key] = max($0[key] ?? 0, until) }
        if policy.isEnabled {
            let interval = 1 / (policy.rate(for: endpoint, in: environment) * max(spent(endpoint), 0.001))
            let tolerance = max(0, toSeconds(policy.burst) - interval)
            next.withLock { $0[key] = max($0[key] ?? 0, until + tolerance) }
        }
    }

    private func seconds() -> Double { toSeconds(ContinuousClock.now - start) }

    private func toSeconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
