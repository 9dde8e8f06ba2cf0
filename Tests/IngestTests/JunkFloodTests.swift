import AppStoreSigning
import Foundation
import HTTPTypes
import HummingbirdTesting
import IngestService
import KafkaClient
import NIOCore
import PipelineRecords
import TestSupport
import Testing

/// Issue 28's junk flood: one signed-in user posts 20,000 junk JWS while Apple's notifications keep
/// arriving. The user gets 429 once its quota is spent, its junk is never written (the chain
/// pre-check answers 400 before the broker), and every notification is stored. Latency figures are
/// printed, never asserted (a loaded machine is slow).
@Suite("Junk flood: one user's junk costs the pipeline nothing", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct JunkFloodTests {
    @Test("20,000 junk uploads from one user beside 1,000 notifications: 400 then 429 with Retry-After, no junk written, every notification stored")
    func junkFlood() async throws {
        let topic = try await TestServices.makeTopic("flood-raw", partitions: 4)
        let signer = await UploadTokenSigner.es256()
        let jwks = try UploadTokens.jwksFile([signer])
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        // The token outlives the suite's time limit: beside the whole suite the flood has taken 743 s,
        // and a token of the usual ten minutes then got 401s for its last uploads.
        var claims = TestUploads.claims("mallory")
        claims.expires = Date().addingTimeInterval(1_800)
        let attacker = [(name: "Authorization", value: "Bearer \(try await signer.token(claims))")]
        // One upload a minute after a burst of 120: the flood outruns any refill.
        let config = IngestConfiguration(
            kafka: KafkaClientConfiguration(bootstrapServers: TestServices.bootstrapServers), uploadAuthentication: TestUploads.jwt(.file(jwks)),
            rawTopic: topic, ackTimeout: TestServices.ingestAckTimeout, userUploadsPerMinute: 1, userUploadBurst: 120,
            uploadPrecheck: ChainPrecheck(trustedRoots: [TestPKI.trusted.root]))
        let producer = try KafkaProducer(configuration: config.producer, logger: TestServices.logger)
        let app = IngestApplication.build(configuration: config, producer: producer, registry: nil, logger: TestServices.logger)
        let junkCount = 20_000
        let notificationCount = 1_000
        let uuids = (0..<notificationCount).map { _ in UUID().uuidString.lowercased() }
        var statuses: [HTTPResponse.Status: Int] = [:]
        var codes: [String: Int] = [:]
        var retryAfterMissing = 0
        var notificationStatuses: [HTTPResponse.Status: Int] = [:]
        let floodStarted = ContinuousClock.now
        let answers = try await app.test(.router) { client in
            async let junk = Self.flood(client, count: junkCount, headers: attacker)
            async let notifications = Self.notify(client, uuids: uuids)
            return try await (junk, notifications)
        }
        // The quota refills one upload a minute: a slow machine's longer flood earns that many more.
        let refilled = Int(((ContinuousClock.now - floodStarted) / .seconds(60)).rounded(.up))
        for answer in answers.0 {
            statuses[answer.status, default: 0] += 1
            codes[answer.code ?? "-", default: 0] += 1
            if answer.status == .tooManyRequests, !answer.retryAfter { retryAfterMissing += 1 }
        }
        for answer in answers.1 { notificationStatuses[answer.status, default: 0] += 1 }
        let notificationLatencies = answers.1.map(\.latency)
        let stored = try await TopicReader.read(topic) { $0.count >= notificationCount }
        await producer.close()

        #expect(statuses.values.reduce(0, +) == junkCount)
        #expect((codes["request.untrusted_chain"] ?? 0) >= 120, "the burst's junk was refused by the pre-check: \(codes)")
        #expect((codes["request.untrusted_chain"] ?? 0) <= 130 + refilled, "then the quota (\(refilled) refilled meanwhile): \(codes)")
        #expect((codes["request.user_rate_limited"] ?? 0) + (codes["request.untrusted_chain"] ?? 0) == junkCount, "\(codes)")
        #expect(retryAfterMissing == 0, "every 429 says when to come back")
        #expect(notificationStatuses == [.ok: notificationCount], "Apple's notifications all stored: \(notificationStatuses)")
        #expect(stored.count == notificationCount, "nothing but the notifications was written")
        #expect(!stored.contains { $0.headers.string(PipelineHeader.source) == PipelineHeader.Source.appUpload })
        // Each notification's payload segment, as it must appear in exactly one stored body.
        let segments = Set(uuids.map { UploadTokens.base64URL(Data(#"{"notificationUUID":"\#($0)"}"#.utf8)) })
        let storedSegments = Set(stored.compactMap { $0.text.split(separator: ".").dropFirst().first.map(String.init) })
        #expect(storedSegments == segments, "every notification stored once")
        let sorted = notificationLatencies.sorted()
        print(
            "junk flood: \(junkCount) junk uploads (\(codes)), \(notificationCount) notifications stored; ingest p50 \(sorted[sorted.count / 2]), p99 \(sorted[sorted.count * 99 / 100])"
        )
    }

    /// `count` junk uploads by one user, 50 in flight: each answer's status, error code and whether it said Retry-After.
    static func flood(
        _ client: any TestClientProtocol, count: Int, headers: [(name: String, value: String)]
    ) async throws -> [(status: HTTPResponse.Status, code: String?, retryAfter: Bool)] {
        var answers: [(status: HTTPResponse.Status, code: String?, retryAfter: Bool)] = []
        for wave in stride(from: 0, to: count, by: 50) {
            try await withThrowingTaskGroup(of: (status: HTTPResponse.Status, code: String?, retryAfter: Bool).self) { posts in
                for i in wave..<min(wave + 50, count) {
                    posts.addTask {
                        let answer = try await postUpload(client, body: uploadBody(jws: fakeJWS(#"{"junk":\#(i)}"#), userId: nil), headers: headers)
                        return (answer.status, answer.error?.error.code, answer.headers[.retryAfter] != nil)
                    }
                }
                for try await answer in posts { answers.append(answer) }
            }
        }
        return answers
    }

    /// One of Apple's notifications per UUID, 20 in flight: each answer's status and how long ingest took.
    static func notify(_ client: any TestClientProtocol, uuids: [String]) async throws -> [(status: HTTPResponse.Status, latency: Duration)] {
        var answers: [(status: HTTPResponse.Status, latency: Duration)] = []
        for wave in stride(from: 0, to: uuids.count, by: 20) {
            try await withThrowingTaskGroup(of: (status: HTTPResponse.Status, latency: Duration).self) { posts in
                for uuid in uuids[wave..<min(wave + 20, uuids.count)] {
                    posts.addTask {
                        let started = ContinuousClock.now
                        let body = #"{"signedPayload":"\#(fakeJWS(#"{"notificationUUID":"\#(uuid)"}"#))"}"#
                        let status = try await client.execute(
                            uri: "/v2/notifications", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body)
                        ) { $0.status }
                        return (status, ContinuousClock.now - started)
                    }
                }
                for try await answer in posts { answers.append(answer) }
            }
        }
        return answers
    }
}
