import AppStoreSigning
import Foundation
import HTTPTypes
import HummingbirdTesting
import StageRuntime
import Synchronization
import TestSupport
import Testing

@testable import IngestService

/// One signed-in user cannot fill the broker: uploads per authenticated user are limited.
@Suite("uploads per user", .timeLimit(.minutes(15)))
struct UploadQuotaTests {
    /// A clock the test moves.
    final class Clock: Sendable {
        let start = ContinuousClock.now
        let offset = Mutex<Duration>(.zero)
        func advance(_ by: Duration) { offset.withLock { $0 += by } }
        var now: ContinuousClock.Instant { start + offset.withLock { $0 } }
    }

    func rejected(_ quota: UploadQuota, _ user: String) -> IngestError? {
        do {
            try quota.take(user)
            return nil
        } catch {
            return error
        }
    }

    @Test("a burst passes, the next upload gets 429 with the seconds until one is back, other users are untouched, and time refills")
    func bucket() {
        let clock = Clock()
        let quota = UploadQuota(settings: .init(perMinute: 30, burst: 3), now: { clock.now })
        #expect((0..<3).allSatisfy { _ in rejected(quota, "alice") == nil })
        let refused = rejected(quota, "alice")
        #expect(refused?.status == .tooManyRequests && refused?.code == .userRateLimited)
        #expect(refused?.retryAfterSeconds == 2, "30 a minute: one every 2 s")
        #expect(rejected(quota, "bob") == nil)
        clock.advance(.seconds(2))
        #expect(rejected(quota, "alice") == nil)
        #expect(rejected(quota, "alice") != nil)
        clock.advance(.seconds(60))
        #expect((0..<3).allSatisfy { _ in rejected(quota, "alice") == nil }, "refilled to the burst, not beyond")
        #expect(rejected(quota, "alice") != nil)
    }

    @Test("0 per minute turns it off; many users keep only the buckets that are not full")
    func offAndBounded() {
        let off = UploadQuota(settings: .init(perMinute: 0, burst: 1))
        #expect((0..<1_000).allSatisfy { _ in rejected(off, "alice") == nil })

        let clock = Clock()
        let quota = UploadQuota(settings: .init(perMinute: 60, burst: 2), maximumUsers: 100, now: { clock.now })
        for user in 0..<1_000 {
            _ = rejected(quota, "user-\(user)")
            clock.advance(.milliseconds(10))
        }
        #expect(quota.trackedUsers <= 201, "buckets refilled within 1 s are forgotten: \(quota.trackedUsers)")
    }

    @Test("through the route: a jwt user's uploads past the burst get 429 request.user_rate_limited with Retry-After; another user still passes")
    func route() async throws {
        let signer = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([signer])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        let alice = [(name: "Authorization", value: "Bearer \(try await signer.token(TestUploads.claims("alice")))")]
        let bob = [(name: "Authorization", value: "Bearer \(try await signer.token(TestUploads.claims("bob")))")]
        try await withUploadIngest(TestUploads.jwt(.file(jwks)), userUploads: (perMinute: 1, burst: 2)) { client in
            // No broker: an upload the quota lets through answers 503 once its acknowledgement times out.
            for _ in 0..<2 { #expect(try await postUpload(client, body: uploadBody(userId: nil), headers: alice).status == .serviceUnavailable) }
            let limited = try await postUpload(client, body: uploadBody(userId: nil), headers: alice)
            #expect(limited.status == .tooManyRequests)
            #expect(limited.error?.error.code == "request.user_rate_limited")
            #expect(limited.headers[.retryAfter].flatMap(Int.init) ?? 0 >= 1, "\(limited.headers)")
            // Receipts share the bucket, and a token's user is counted before the body is read: junk counts.
            let receipt = try await postUpload(client, body: #"{"appReceipt":"junk"}"#, headers: alice, uri: "/v1/receipts")
            #expect(receipt.status == .tooManyRequests && receipt.error?.error.code == "request.user_rate_limited")
            #expect(try await postUpload(client, body: uploadBody(userId: nil), headers: bob).status == .serviceUnavailable)
        }
    }

    @Test("through the route: junk a backend relays for one user (HMAC, the body's userId) counts against that user before the chain pre-check")
    func hmacJunkCounts() async throws {
        let precheck = ChainPrecheck(trustedRoots: [TestPKI.trusted.root])
        try await withUploadIngest(try TestUploads.hmac(), userUploads: (perMinute: 1, burst: 2), precheck: precheck) { client in
            func post(_ user: String) async throws -> (status: HTTPResponse.Status, code: String?, retryAfter: String?) {
                let body = uploadBody(jws: fakeJWS(#"{"junk":"\#(UUID())"}"#), userId: user)
                let answer = try await postUpload(
                    client, body: body, headers: UploadTokens.hmacHeaders(secret: TestUploads.secret, body: Array(body.utf8)))
                return (answer.status, answer.error?.error.code, answer.headers[.retryAfter])
            }
            for _ in 0..<2 {
                let refused = try await post("mallory")
                #expect(refused.status == .badRequest && refused.code == "request.untrusted_chain", "\(refused)")
            }
            let limited = try await post("mallory")
            #expect(limited.status == .tooManyRequests && limited.code == "request.user_rate_limited", "\(limited)")
            #expect(Int(limited.retryAfter ?? "") ?? 0 >= 1)
            let other = try await post("alice")
            #expect(other.status == .badRequest && other.code == "request.untrusted_chain", "another user's bucket is untouched: \(other)")
        }
    }
}
