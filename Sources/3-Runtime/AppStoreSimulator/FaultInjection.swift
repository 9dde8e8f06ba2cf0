import Foundation
import HTTPTypes
import Synchronization

/// What the simulator does wrong on purpose, changeable at runtime (`PUT /sim/faults`).
///
/// Applied to every `/inApps` request before its token is checked: first the added latency, then a
/// 429 with `Retry-After` for ``rateLimitedShare`` of requests, then a 5xx for ``errorShare``.
/// ``requestsPerSecond`` additionally enforces a limit per bundle ID and endpoint the way Apple
/// does (429, `Retry-After` = when the next request is allowed, UNIX ms), whoever sends: every
/// process calling for one app spends one budget. Apple counts over an hour, so a burst within it
/// passes; ``burstSeconds`` is that allowance here. Faults stop at ``until``.
public struct FaultPlan: Codable, Hashable, Sendable {
    /// Share (0…1) of requests answered with ``errorStatus``.
    public var errorShare: Double
    /// The 5xx status of injected errors.
    public var errorStatus: Int
    /// Apple's code in the injected error body (5000000 general, 5000001 retryable).
    public var errorCode: Int64
    /// Share (0…1) of requests answered 429.
    public var rateLimitedShare: Double
    /// How far ahead the injected 429's `Retry-After` points.
    public var retryAfterMilliseconds: Int64
    /// Delay added to every request.
    public var latencyMilliseconds: Int
    /// A real per-bundle, per-endpoint limit, requests per second; `nil` for none.
    public var requestsPerSecond: Double?
    /// Seconds' worth of ``requestsPerSecond`` that may come at once (0: evenly spaced only).
    public var burstSeconds: Double
    /// When the faults end (`nil`: until changed).
    public var until: Date?
    /// How many Get Transaction History lookups of each transaction ID answer 404 `4040010`
    /// ("Transaction id not found") before the history shows it, as Apple does for a purchase it
    /// has just signed. Counted per ID from when the plan is set.
    public var historyNotVisibleLookups: Int

    public init(
        errorShare: Double = 0, errorStatus: Int = 500, errorCode: Int64 = 5_000_000, rateLimitedShare: Double = 0,
        retryAfterMilliseconds: Int64 = 1000, latencyMilliseconds: Int = 0, requestsPerSecond: Double? = nil, until: Date? = nil,
        historyNotVisibleLookups: Int = 0, burstSeconds: Double = 0
    ) {
        self.burstSeconds = burstSeconds
        self.historyNotVisibleLookups = historyNotVisibleLookups
        self.errorShare = errorShare
        self.errorStatus = errorStatus
        self.errorCode = errorCode
        self.rateLimitedShare = rateLimitedShare
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.latencyMilliseconds = latencyMilliseconds
        self.requestsPerSecond = requestsPerSecond
        self.until = until
    }

    /// No faults.
    public static let none = FaultPlan()

    /// Every field is optional in JSON (`{"errorShare": 1}` is a whole plan); missing ones take the defaults.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = FaultPlan()
        errorShare = try c.decodeIfPresent(Double.self, forKey: .errorShare) ?? d.errorShare
        errorStatus = try c.decodeIfPresent(Int.self, forKey: .errorStatus) ?? d.errorStatus
        errorCode = try c.decodeIfPresent(Int64.self, forKey: .errorCode) ?? d.errorCode
        rateLimitedShare = try c.decodeIfPresent(Double.self, forKey: .rateLimitedShare) ?? d.rateLimitedShare
        retryAfterMilliseconds = try c.decodeIfPresent(Int64.self, forKey: .retryAfterMilliseconds) ?? d.retryAfterMilliseconds
        latencyMilliseconds = try c.decodeIfPresent(Int.self, forKey: .latencyMilliseconds) ?? d.latencyMilliseconds
        requestsPerSecond = try c.decodeIfPresent(Double.self, forKey: .requestsPerSecond)
        burstSeconds = try c.decodeIfPresent(Double.self, forKey: .burstSeconds) ?? d.burstSeconds
        until = try c.decodeIfPresent(Date.self, forKey: .until)
        historyNotVisibleLookups = try c.decodeIfPresent(Int.self, forKey: .historyNotVisibleLookups) ?? d.historyNotVisibleLookups
        guard historyNotVisibleLookups >= 0, burstSeconds >= 0 else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "historyNotVisibleLookups and burstSeconds must be 0 or more"))
        }
        guard (0...1).contains(errorShare), (0...1).contains(rateLimitedShare), (500...599).contains(errorStatus) || (400...499).contains(errorStatus)
        else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "shares must be 0…1 and errorStatus a 4xx or 5xx"))
        }
    }
}

/// Counters of what the simulator answered, for tests and benchmarks (`GET /sim/stats`).
public struct SimulatorStatistics: Codable, Hashable, Sendable {
    /// Every `/inApps` request.
    public var requests: Int = 0
    /// By endpoint name (`transaction_history`, …).
    public var byEndpoint: [String: Int] = [:]
    /// By answered status (`200`, `401`, `429`, `500`…).
    public var byStatus: [String: Int] = [:]
    /// Answers that were injected faults (5xx or 429 by share, or the enforced limit).
    public var injectedFaults: Int = 0
    /// History lookups answered 404 `4040010` under ``FaultPlan/historyNotVisibleLookups``.
    public var historyNotVisible: Int = 0
    /// Refunded transactions Get Refund History returned (a sweep that keeps Apple's `revision`
    /// asks again only for new ones).
    public var refundsReturned: Int = 0
}

/// Holds the current plan and the counters.
public final class FaultInjector: Sendable {
    private let plan = Mutex(FaultPlan.none)
    private let stats = Mutex(SimulatorStatistics())
    /// Next allowed time per (bundle ID, endpoint) under ``FaultPlan/requestsPerSecond``.
    private let nextAllowed = Mutex<[String: Double]>([:])
    /// History lookups answered so far per transaction ID under ``FaultPlan/historyNotVisibleLookups``.
    private let historyLookups = Mutex<[String: Int]>([:])
    /// Lookups still to hide per transaction ID (``hideHistory(of:lookups:)``).
    private let hiddenPurchases = Mutex<[String: Int]>([:])
    /// Purchases (by original transaction ID) whose lookups all fail: see ``break(purchase:)``.
    private let brokenPurchases = Mutex<Set<String>>([])
    let clock: @Sendable () -> Date

    init(clock: @escaping @Sendable () -> Date) {
        self.clock = clock
    }

    /// The plan in force.
    public var current: FaultPlan { plan.withLock { $0 } }

    /// Replaces the plan (and starts counting history lookups afresh).
    public func set(_ newPlan: FaultPlan) {
        plan.withLock { $0 = newPlan }
        historyLookups.withLock { $0 = [:] }
    }

    /// One purchase Apple has just made that its history does not show yet: its next `lookups`
    /// history lookups answer 404 `4040010`, whatever the plan says.
    public func hideHistory(of transactionId: String, lookups: Int) {
        hiddenPurchases.withLock { $0[transactionId] = lookups }
    }

    /// One purchase Apple answers 500 (`5000000`) for on every history lookup, for good, whatever the
    /// plan says, while every other lookup works: it happens (one purchase's data broken on Apple's
    /// side), and it must hold back no other customer.
    public func `break`(purchase originalTransactionId: String) {
        _ = brokenPurchases.withLock { $0.insert(originalTransactionId) }
    }

    /// The error a lookup of a purchase ``break(purchase:)`` broke answers with, counted as injected.
    func brokenPurchaseError(_ originalTransactionId: String) -> SimulatorError? {
        guard brokenPurchases.withLock({ $0.contains(originalTransactionId) }) else { return nil }
        stats.withLock { $0.injectedFaults += 1 }
        return SimulatorError(.internalServerError, 5_000_000, "An unknown error occurred.")
    }

    /// Whether this history lookup of `transactionId` is one the plan, or ``hideHistory(of:lookups:)``,
    /// hides (counted when it is).
    func hidesHistory(of transactionId: String) -> Bool {
        let hiddenAlone = hiddenPurchases.withLock { hidden -> Bool in
            guard let left = hidden[transactionId], left > 0 else { return false }
            hidden[transactionId] = left - 1
            return true
        }
        let hidden = current.historyNotVisibleLookups
        guard hiddenAlone || hidden > 0 else { return false }
        let hides =
            hiddenAlone
            || historyLookups.withLock { seen in
                seen[transactionId, default: 0] += 1
                return seen[transactionId]! <= hidden
            }
        if hides { stats.withLock { $0.historyNotVisible += 1 } }
        return hides
    }

    /// The counters so far.
    public var statistics: SimulatorStatistics { stats.withLock { $0 } }

    /// Zeroes the counters.
    public func resetStatistics() { stats.withLock { $0 = SimulatorStatistics() } }

    func countRefundsReturned(_ count: Int) {
        stats.withLock { $0.refundsReturned += count }
    }

    func record(endpoint: String, status: Int, injected: Bool) {
        stats.withLock { s in
            s.requests += 1
            s.byEndpoint[endpoint, default: 0] += 1
            s.byStatus["\(status)", default: 0] += 1
            if injected { s.injectedFaults += 1 }
        }
    }

    /// The fault for this request, if any (after sleeping the added latency).
    func apply(bundleId: String?, endpoint: String) async -> SimulatorError? {
        var active = current
        let now = clock()
        if let until = active.until, until <= now {
            active = .none
            set(.none)
        }
        if active.latencyMilliseconds > 0 {
            try? await Task.sleep(for: .milliseconds(active.latencyMilliseconds))
        }
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        if active.rateLimitedShare > 0, Double.random(in: 0..<1) < active.rateLimitedShare {
            return SimulatorError(.tooManyRequests, 4_290_000, "Rate limit exceeded.", retryAfterMilliseconds: nowMs + active.retryAfterMilliseconds)
        }
        if active.errorShare > 0, Double.random(in: 0..<1) < active.errorShare {
            return SimulatorError(.init(code: active.errorStatus), active.errorCode, "An unknown error occurred.")
        }
        if let rate = active.requestsPerSecond, rate > 0, let bundleId {
            let key = "\(bundleId)|\(endpoint)"
            let seconds = now.timeIntervalSince1970
            // A cell-rate check: a request passes while the budget's theoretical time is no more
            // than the burst allowance ahead of now.
            let tolerance = active.burstSeconds
            let next: Double? = nextAllowed.withLock { table in
                let theoretical = max(table[key] ?? seconds, seconds)
                if theoretical - tolerance > seconds { return theoretical - tolerance }
                table[key] = theoretical + 1 / rate
                return nil
            }
            if let next {
                return SimulatorError(.tooManyRequests, 4_290_000, "Rate limit exceeded.", retryAfterMilliseconds: Int64((next * 1000).rounded(.up)))
            }
        }
        return nil
    }
}
