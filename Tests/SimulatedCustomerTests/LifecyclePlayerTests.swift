import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import SimulatedCustomers
import SimulatedDelivery
import Synchronization
import Testing

/// Records in memory: what the player applied and signed, and each delivery attempt.
final class MemoryRecords: LifecycleRecords {
    struct State {
        var applied: [(customer: String, mutations: [AppleMutation])] = []
        var signed: [String: NotificationSpec] = [:]
        var attempts: [String: [String]] = [:]
    }
    let state = Mutex(State())

    func apply(_ mutations: [AppleMutation], customerID: String) async throws {
        state.withLock { $0.applied.append((customerID, mutations)) }
    }

    func sign(_ notification: NotificationSpec, signedAt: Date) async throws -> (notificationUUID: String, signedPayload: String) {
        let uuid = UUID().uuidString.lowercased()
        state.withLock { $0.signed[uuid] = notification }
        return (uuid, "eyJhbGciOiJFUzI1NiJ9.\(uuid).c2ln")
    }

    func signedTransaction(_ transactionId: String, signedAt: Date) async throws -> String { "eyJhbGciOiJFUzI1NiJ9.\(transactionId).c2ln" }

    func appReceipt(_ transactionId: String) async throws -> String { "receipt-\(transactionId)" }

    func recordAttempt(notificationUUID: String, result: String, at: Date) async {
        state.withLock { $0.attempts[notificationUUID, default: []].append(result) }
    }
}

/// A webhook that counts deliveries per notification and can refuse the first attempt of each.
final class CountingWebhook: Sendable {
    let deliveries = Mutex([String: Int]())
    let uploads = Mutex([String]())
    /// Each receipt upload's token and `appReceipt`.
    let receipts = Mutex([(String, String)]())
    let refuseFirstAttempt: Bool

    init(refuseFirstAttempt: Bool) { self.refuseFirstAttempt = refuseFirstAttempt }

    func application() -> some ApplicationProtocol {
        let router = Router()
        router.post("/v2/notifications") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: String]
            let uuid = json?["signedPayload"]?.split(separator: ".")[1].description ?? "?"
            let count = self.deliveries.withLock { d -> Int in
                d[uuid, default: 0] += 1
                return d[uuid]!
            }
            return self.refuseFirstAttempt && count == 1 ? .internalServerError : .ok
        }
        router.post("/v1/transactions") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: String]
            self.uploads.withLock { $0.append(json?["appAccountToken"] ?? "") }
            return .ok
        }
        router.post("/v1/receipts") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: String]
            self.receipts.withLock { $0.append((json?["appAccountToken"] ?? "", json?["appReceipt"] ?? "")) }
            return .ok
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }
}

@Suite("Lifecycle playback: delivering like Apple", .timeLimit(.minutes(15)))
struct LifecyclePlayerTests {
    let customers = LifecycleSimulation(month: 600, horizon: Date(), seed: 7).customers(LifecycleScenario.allCases.count * 2)

    func play(_ options: DeliveryOptions, webhook: CountingWebhook) async throws -> (PlaybackReport, MemoryRecords) {
        // These tests count attempts: on a loaded machine the in-process webhook can take longer
        // than Apple's 10 s to answer, and a timed-out attempt would be one more.
        var patient = options
        patient.timeout = .seconds(120)
        let options = patient
        let records = MemoryRecords()
        let customers = self.customers
        let result = try await webhook.application().test(.live) { client in
            let player = LifecyclePlayer(
                records: records, webhook: "http://127.0.0.1:\(client.port!)", options: options, seed: 99, client: .shared)
            return try await player.play(customers)
        }
        return (result, records)
    }

    @Test("every notification arrives at least once; duplicates arrive twice; records change in time order")
    func duplicatesAndDisorder() async throws {
        var options = DeliveryOptions()
        options.duplicateRate = 0.3
        options.reorderWindow = 8
        options.maxDelay = .milliseconds(30)
        let webhook = CountingWebhook(refuseFirstAttempt: false)
        let (report, records) = try await play(options, webhook: webhook)

        let notifications = customers.flatMap(\.steps).compactMap(\.notification).count
        let neverDelivered = customers.flatMap(\.steps).compactMap(\.notification).filter(\.neverDelivered).count
        #expect(neverDelivered > 0, "refund-never-delivered plays one")
        #expect(report.notifications == notifications)
        #expect(report.delivered == notifications - neverDelivered && report.dropped == neverDelivered && report.undelivered == 0)
        let counts = webhook.deliveries.withLock { $0 }
        #expect(counts.count == notifications - neverDelivered)
        #expect(counts.values.filter { $0 == 2 }.count == report.duplicates)
        #expect(report.duplicates > notifications / 6, "about 30% duplicated (\(report.duplicates) of \(notifications))")
        // Uploads carry the customer's token: signed transactions to /v1/transactions, StoreKit 1
        // receipts (listing the purchase) to /v1/receipts.
        func uploaders(_ kind: UploadSpec.Kind) -> [String] {
            customers.filter { $0.steps.contains { $0.upload?.kind == kind } }.map { $0.customer.uuidString.lowercased() }
        }
        #expect(Set(webhook.uploads.withLock { $0 }) == Set(uploaders(.signedTransaction)))
        #expect(
            Set(uploaders(.signedTransaction).compactMap { id in customers.first { $0.customer.uuidString.lowercased() == id }?.scenario }) == [
                .withoutTokenUploaded, .offerCodeUploaded, .familyShared, .familySharingRevoked,
            ])
        let receipts = webhook.receipts.withLock { $0 }
        #expect(Set(receipts.map(\.0)) == Set(uploaders(.appReceipt)) && !receipts.isEmpty)
        let receiptIDs = customers.flatMap(\.steps).compactMap(\.upload).filter { $0.kind == .appReceipt }.map { "receipt-\($0.transactionId)" }
        #expect(Set(receipts.map(\.1)) == Set(receiptIDs))
        #expect(report.steps == customers.flatMap(\.steps).count)
        let applied = records.state.withLock { $0.applied }
        #expect(applied.count == report.steps)
        for customer in customers {
            let mine = applied.filter { $0.customer == customer.customer.uuidString.lowercased() }.map(\.mutations)
            #expect(mine == customer.steps.map(\.mutations), "customer \(customer.index)'s records change in step order")
        }
    }

    @Test("a refused delivery is retried on Apple's schedule, and every attempt is recorded")
    func retries() async throws {
        var options = DeliveryOptions()
        options.retryDelays = DeliveryOptions.retrySchedule(month: 60)  // one hour = 83 ms
        let webhook = CountingWebhook(refuseFirstAttempt: true)
        let (report, records) = try await play(options, webhook: webhook)
        // A notification Apple never manages to deliver is tried once and recorded so (refund-never-delivered).
        #expect(report.retries == report.notifications - report.dropped)
        #expect(report.delivered == report.notifications - report.dropped)
        let attempts = records.state.withLock { $0.attempts }
        #expect(attempts.values.filter { $0 == ["NO_RESPONSE"] }.count == report.dropped)
        #expect(attempts.values.filter { $0 != ["NO_RESPONSE"] }.allSatisfy { $0 == ["UNSUCCESSFUL_HTTP_RESPONSE_CODE", "SUCCESS"] })
    }

    @Test("lost notifications never reach the webhook and are reported by UUID")
    func losses() async throws {
        var options = DeliveryOptions()
        options.dropRate = 0.25
        let webhook = CountingWebhook(refuseFirstAttempt: false)
        let (report, records) = try await play(options, webhook: webhook)
        #expect(report.dropped > 0 && report.dropped < report.notifications / 2)
        #expect(report.delivered + report.dropped == report.notifications)
        let delivered = Set(webhook.deliveries.withLock { $0.keys })
        #expect(delivered.isDisjoint(with: report.lostNotificationUUIDs))
        let attempts = records.state.withLock { $0.attempts }
        #expect(report.lostNotificationUUIDs.allSatisfy { attempts[$0] == ["NO_RESPONSE"] })
    }
}
