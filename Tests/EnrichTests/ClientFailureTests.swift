import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import Foundation
import StageRuntime
import Synchronization
import TestSupport
import Testing

/// How the client classifies failures, and that waiting as told makes the call succeed.
@Suite("App Store Server API client failures", .serialized, .timeLimit(.minutes(15)))
struct ClientFailureTests {
    func seeded() async throws -> (RunningSimulator, AppStoreServerAPIClient) {
        let sim = try await RunningSimulator.start()
        try sim.apple.store.upsert([SimFixture.transaction(original: "2000000000400000", id: "2000000000400000", purchased: SimFixture.now())])
        return (sim, try SimFixture.client(sim))
    }

    @Test("429 carries Apple's Retry-After (UNIX ms) as a wait; waiting it out succeeds")
    func rateLimitedIsWaitedOut() async throws {
        let (sim, client) = try await seeded()
        defer { Task { await sim.stop() } }
        // Apple limits every call until the test has seen one 429 (then its window ends), whenever
        // that call arrives: a window of fixed length had passed before the call reached the
        // simulator on a loaded machine. Retry-After points 2 s ahead.
        sim.apple.faults.set(FaultPlan(rateLimitedShare: 1, retryAfterMilliseconds: 2_000))
        let started = ContinuousClock.now
        var attempts = 0
        var waits: [Duration] = []
        while true {
            attempts += 1
            do {
                _ = try await client.transactionInfo(transactionId: "2000000000400000", target: SimFixture.target)
                break
            } catch {
                #expect(error.kind == .rateLimited)
                #expect(error.statusCode == 429)
                #expect(error.errorCode == 4_290_000)
                #expect(error.isTransient)
                let wait = try #require(error.retryAfter)
                // Apple's UNIX-ms time less now: at most 2 s; 0 when the answer arrived after it (a loaded machine).
                #expect(wait >= .zero && wait <= .milliseconds(2_000))
                waits.append(wait)
                sim.apple.faults.set(.none)
                // What the stage runtime does with a transient error: back off, at least as long as asked.
                try await Task.sleep(
                    for: RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .seconds(5)).delay(afterAttempt: attempts, retryAfter: wait))
            }
            #expect(attempts < 5)
            if attempts >= 5 { break }
        }
        #expect(attempts == 2, "one 429, then success after the advertised time")
        #expect(ContinuousClock.now - started >= .milliseconds(1_800))
        #expect(AppStoreAPIError.parseRetryAfter("\(AppStoreJSON.milliseconds(since1970: Date()) + 2000)")! > .milliseconds(1500))
        #expect(AppStoreAPIError.parseRetryAfter("3") == .seconds(3))
    }

    @Test("5xx (and Apple's retryable codes) are transient and a retry succeeds; 4xx codes are permanent with Apple's code")
    func classification() async throws {
        let (sim, client) = try await seeded()
        defer { Task { await sim.stop() } }
        for (status, code) in [(500, Int64(5_000_000)), (500, 5_000_001), (503, 5_000_000)] {
            sim.apple.faults.set(FaultPlan(errorShare: 1, errorStatus: status, errorCode: code))
            do {
                _ = try await client.transactionInfo(transactionId: "2000000000400000", target: SimFixture.target)
                Issue.record("the fault must surface")
            } catch {
                #expect(error.statusCode == status)
                #expect(error.errorCode == code)
                #expect(error.code.rawValue == "apple_api.\(code)")
                #expect(error.isTransient)
            }
            sim.apple.faults.set(.none)
            _ = try await client.transactionInfo(transactionId: "2000000000400000", target: SimFixture.target)
        }
        // Apple's retryable 404s are transient; other 404s and 400s are permanent.
        sim.apple.faults.set(FaultPlan(errorShare: 1, errorStatus: 404, errorCode: 4_040_006))
        do {
            _ = try await client.transactionInfo(transactionId: "2000000000400000", target: SimFixture.target)
        } catch {
            #expect(error.isTransient && error.code.rawValue == "apple_api.4040006")
        }
        sim.apple.faults.set(.none)
        do {
            _ = try await client.transactionInfo(transactionId: "2000000000499999", target: SimFixture.target)
            Issue.record("an unknown transaction must fail")
        } catch {
            #expect(error.statusCode == 404 && error.errorCode == 4_040_010 && !error.isTransient)
            #expect(error.code.rawValue == "apple_api.4040010")
            #expect(FailureClassification(error).code == "apple_api.4040010", "the stage runtime sees Apple's code")
        }
        do {
            _ = try await client.transactionHistory(transactionId: "not-a-number", target: SimFixture.target)
        } catch {
            #expect(error.errorCode == 4_000_006 && !error.isTransient)
        }
        // A closed port: a connection error is transient.
        let closed = try AppStoreServerAPIClient(
            configuration: .init(
                credentials: [SimFixture.credentials], baseURLOverride: "http://127.0.0.1:\(LocalHTTP.freePort())", requestTimeout: .seconds(2)),
            httpClient: .shared, verifier: SimFixture.verifier(), logger: TestServices.logger)
        do {
            _ = try await closed.transactionInfo(transactionId: "2000000000400000", target: SimFixture.target)
        } catch {
            #expect(error.kind == .unreachable && error.isTransient)
        }
        // Added latency beyond the timeout is a transient timeout.
        sim.apple.faults.set(FaultPlan(latencyMilliseconds: 1500))
        let impatient = try SimFixture.client(sim, timeout: .milliseconds(300))
        do {
            _ = try await impatient.transactionInfo(transactionId: "2000000000400000", target: SimFixture.target)
        } catch {
            #expect(error.kind == .timeout && error.isTransient)
        }
        sim.apple.faults.set(.none)
    }

    @Test("an answer signed by a chain the verifier does not trust is rejected, permanently")
    func untrustedChain() async throws {
        let forged = try await RunningSimulator.start(authority: SimFixture.forger)
        defer { Task { await forged.stop() } }
        try forged.apple.store.upsert([SimFixture.transaction(original: "2000000000500000", id: "2000000000500000", purchased: SimFixture.now())])
        let client = try SimFixture.client(forged)
        do {
            _ = try await client.transactionInfo(transactionId: "2000000000500000", target: SimFixture.target)
            Issue.record("a forged answer must be rejected")
        } catch {
            #expect(error.kind == .untrustedResponse)
            #expect(error.code == .untrustedResponse)
            #expect(error.message.contains("verification.untrusted_root"))
            #expect(!error.isTransient)
        }
        do {
            _ = try await client.transactionHistory(transactionId: "2000000000500000", target: SimFixture.target)
            Issue.record("a forged history must be rejected")
        } catch {
            #expect(error.kind == .untrustedResponse)
        }
    }

    @Test("the client-side limiter spaces requests per key and endpoint; a Sandbox key gets 10 % of Apple's rate")
    func limiter() async throws {
        // Get Transaction Info: 50/s in Production, 5/s in Sandbox; scale 1, burst of one request.
        let limiter = RateLimiter(policy: RateLimitPolicy(scale: 1, burst: .milliseconds(1)))
        #expect(limiter.policy.rate(for: .transactionInfo, in: .production) == 50)
        #expect(limiter.policy.rate(for: .transactionInfo, in: .sandbox) == 5)
        // Only lower bounds on time (a loaded machine may add to them) and waits that cannot happen.
        let started = ContinuousClock.now
        for _ in 0..<6 {
            try await limiter.acquire(keyID: "K", bundleId: "b", environment: .sandbox, endpoint: .transactionInfo)
        }
        let sandbox = ContinuousClock.now - started
        #expect(sandbox >= .milliseconds(950), "6 requests at 5/s take about a second (took \(sandbox))")
        // Production is its own bucket: its first request does not wait; six take at least 100 ms.
        let waitsBefore = limiter.throttledRequests
        let production = ContinuousClock.now
        try await limiter.acquire(keyID: "K", bundleId: "b", environment: .production, endpoint: .transactionInfo)
        #expect(limiter.throttledRequests == waitsBefore)
        for _ in 0..<5 {
            try await limiter.acquire(keyID: "K", bundleId: "b", environment: .production, endpoint: .transactionInfo)
        }
        #expect(ContinuousClock.now - production >= .milliseconds(99), "6 requests at 50/s take about 100 ms")
        // Another endpoint has its own budget: its first request does not wait either.
        let waitsAfter = limiter.throttledRequests
        try await limiter.acquire(keyID: "K", bundleId: "b", environment: .sandbox, endpoint: .subscriptionStatuses)
        #expect(limiter.throttledRequests == waitsAfter)
    }

    @Test("one budget shared: a process spends its group's share times its own part; at part 0 nothing is sent until a part is given")
    func sharedBudget() async throws {
        // Get Transaction Info in Production: 50/s. The group spends half of it and this member a
        // half of that (it owns 3 of 6 partitions): 12.5/s, so 6 requests take at least 400 ms.
        let limiter = RateLimiter(policy: RateLimitPolicy(scale: 1, burst: .milliseconds(1), share: 0.5))
        limiter.setPart(PartitionOwnership(owned: 3, total: 6).share)
        #expect(limiter.part == 0.5)
        let started = ContinuousClock.now
        for _ in 0..<6 {
            try await limiter.acquire(keyID: "K", bundleId: "b", environment: .production, endpoint: .transactionInfo)
        }
        let spent = ContinuousClock.now - started
        #expect(spent >= .milliseconds(390), "6 requests at a quarter of 50/s take about 400 ms (took \(spent))")
        // An endpoint enrich never calls (refund history) has one caller: its whole budget, 10/s,
        // of which this member's part is a half.
        #expect(limiter.policy.share(for: .refundHistory) == 1 && limiter.policy.share(for: .transactionHistory) == 0.5)
        let refunds = ContinuousClock.now
        for _ in 0..<3 {
            try await limiter.acquire(keyID: "K", bundleId: "b", environment: .production, endpoint: .refundHistory)
        }
        #expect(ContinuousClock.now - refunds >= .milliseconds(390), "3 requests at half of 10/s take about 400 ms")

        // A member that owns nothing (or has not been told yet) sends nothing, however long it waits.
        let idle = RateLimiter(policy: RateLimitPolicy(scale: 1, burst: .seconds(10), share: 0.8))
        idle.setPart(0)
        let sent = Atomic<Bool>(false)
        let waiting = Task {
            try await idle.acquire(keyID: "K", bundleId: "b", environment: .production, endpoint: .transactionInfo)
            sent.store(true, ordering: .relaxed)
        }
        while idle.throttledRequests < 3 { try await Task.sleep(for: .milliseconds(50)) }
        let sentEarly = sent.load(ordering: .relaxed)
        #expect(!sentEarly, "a request left while the member's part was 0")
        idle.setPart(PartitionOwnership(owned: 1, total: 4).share)
        try await waiting.value
        let sentLater = sent.load(ordering: .relaxed)
        #expect(sentLater)
        #expect(PartitionOwnership(owned: 0, total: 0).share == 0)
    }

    @Test("a Sandbox request that would wait past the allowed wait spends nothing and is deferred to a turn of its own; Production still waits")
    func sandboxDeferral() async throws {
        // Get Transaction Info in Sandbox at a tenth of 5/s: one request every 2 s, no burst.
        let limiter = RateLimiter(policy: RateLimitPolicy(scale: 0.1, burst: .milliseconds(1), sandboxMaximumWait: .milliseconds(100)))
        #expect(limiter.policy.maximumWait(in: .production) == nil)
        try limiter.checkRoom(keyID: "K", bundleId: "b", environment: .sandbox, endpoints: [.transactionInfo])
        // The bucket is empty: the first request leaves at once, and checking did not spend its slot.
        try await limiter.acquire(keyID: "K", bundleId: "b", environment: .sandbox, endpoint: .transactionInfo)
        var waits: [Duration] = []
        for _ in 0..<3 {
            do {
                try await limiter.acquire(keyID: "K", bundleId: "b", environment: .sandbox, endpoint: .transactionInfo)
            } catch let deferral as RateLimiter.Deferral {
                waits.append(deferral.retryAfter)
            }
        }
        #expect(limiter.throttledRequests == 0, "no request waited")
        // Deferred one after another, each told to come back one interval (2 s) after the one before.
        #expect(waits.count == 3)
        #expect(waits.first.map { $0 > .seconds(1) } == true, "\(waits)")
        for (earlier, later) in zip(waits, waits.dropFirst()) { #expect(later - earlier > .seconds(1), "\(waits)") }
        // A lookup's check names the endpoint with no room (statuses has room, transaction info none).
        let refused = #expect(throws: RateLimiter.Deferral.self) {
            try limiter.checkRoom(keyID: "K", bundleId: "b", environment: .sandbox, endpoints: [.subscriptionStatuses, .transactionInfo])
        }
        #expect(refused?.endpoint == .transactionInfo)
    }

    @Test("credentials: the list syntax, env: keys, and nothing secret in descriptions or errors")
    func credentials() throws {
        let pem = SimFixture.apiKey.privateKey.pemRepresentation
        let path = try SimFixture.writeAPIKey()
        let list = try AppStoreAPICredentials.parseList(
            "com.a:iss-1:KEY1:\(path), com.b:iss-2:KEY2:env:B_KEY", environment: ["B_KEY": pem])
        #expect(list.map(\.bundleId) == ["com.a", "com.b"])
        #expect(!"\(list)".contains("PRIVATE KEY"))
        #expect(throws: AppStoreAPIError.self) { try AppStoreAPICredentials.parseList("com.a:iss:KEY") }
        #expect(throws: AppStoreAPIError.self) { try AppStoreAPICredentials.parseList("com.a:i:K:/no/such/file.p8") }
        do {
            _ = try AppStoreAPICredentials(
                bundleId: "com.a", issuerID: "i", keyID: "K", privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
        } catch {
            #expect(error.code == .invalidCredentials)
            #expect(!error.message.contains("AAAA"))
        }
    }
}
