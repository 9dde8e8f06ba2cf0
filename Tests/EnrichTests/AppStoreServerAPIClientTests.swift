import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import Foundation
import JSONCoding
import NIOCore
import NIOHTTP1
import StageRuntime
import Synchronization
import TestSupport
import Testing

/// The client against the simulated Apple on loopback: every endpoint, paging, Apple's token
/// checks, and the classification of every kind of failure.
@Suite("App Store Server API client against the simulator", .serialized, .timeLimit(.minutes(15)))
struct AppStoreServerAPIClientTests {
    /// A customer with `count` renewals of one subscription, seeded out of purchase order.
    static func seedSubscription(_ sim: RunningSimulator, original: String, count: Int, token: UUID? = nil) throws -> [JWSTransactionDecodedPayload] {
        // The newest renewal was a day ago, so the subscription is active.
        let start = SimFixture.now().addingTimeInterval(-Double(count - 1) * 30 * 86_400 - 86_400)
        var all = (0..<count).map { i in
            SimFixture.transaction(
                original: original, id: "\(original)\(String(format: "%03d", i))", purchased: start.addingTimeInterval(Double(i) * 30 * 86_400),
                token: i == 0 ? token : nil)
        }
        all.reverse()  // stored (and so returned) newest first: Apple's order is by modification
        try sim.apple.store.upsert(all)
        return all.reversed()
    }

    @Test("transaction info, history over 3 pages with filters, statuses, refunds, order lookup")
    func readEndpoints() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let client = try SimFixture.client(sim)
        let seeded = try Self.seedSubscription(sim, original: "2000000000100000", count: 45)
        let consumable = SimFixture.transaction(
            original: "2000000000100900", id: "2000000000100900", purchased: SimFixture.now(), type: .consumable,
            revoked: SimFixture.now())
        try sim.apple.store.upsert([consumable], customerID: "customer-2000000000100000")
        sim.apple.store.addOrder("MQ1234567", transactionIds: [seeded[0].transactionId!])

        let info = try await client.transactionInfo(transactionId: seeded[3].transactionId!, target: SimFixture.target)
        #expect(info.transactionId == seeded[3].transactionId)
        #expect(info.environment == .sandbox)

        let first = try await client.transactionHistoryPage(transactionId: "2000000000100000", target: SimFixture.target)
        #expect(first.transactions.count == 20)
        #expect(first.hasMore)
        let all = try await client.transactionHistory(transactionId: "2000000000100000", target: SimFixture.target)
        #expect(all.count == 46, "45 renewals and the consumable, over 3 pages")
        #expect(Set(all.compactMap(\.transactionId)) == Set(seeded.compactMap(\.transactionId) + ["2000000000100900"]))
        let onlySubscriptions = try await client.transactionHistory(
            transactionId: "2000000000100000", query: TransactionHistoryQuery(productTypes: [.autoRenewable]), target: SimFixture.target)
        #expect(onlySubscriptions.count == 45)
        let pagesBefore = sim.apple.faults.statistics.byEndpoint["transaction_history"] ?? 0
        #expect(pagesBefore == 1 + 3 + 3)

        let statuses = try await client.allSubscriptionStatuses(transactionId: "2000000000100000", target: SimFixture.target)
        #expect(statuses.count == 1)
        #expect(statuses.first?.status == .active)
        #expect(statuses.first?.transaction?.transactionId == seeded.last?.transactionId, "the latest by purchase date")
        #expect(statuses.first?.renewalInfo?.originalTransactionId == "2000000000100000")
        #expect(try await client.allSubscriptionStatuses(transactionId: "2000000000100000", statuses: [.expired], target: SimFixture.target).isEmpty)

        let refunds = try await client.refundHistoryPage(transactionId: "2000000000100000", target: SimFixture.target)
        #expect(refunds.transactions.map(\.transactionId) == ["2000000000100900"])
        #expect(!refunds.hasMore)

        let order = try await client.lookUpOrderID("MQ1234567", target: SimFixture.target)
        #expect(order.isValid)
        #expect(order.transactions.map(\.transactionId) == [seeded[0].transactionId])
        #expect(try await client.lookUpOrderID("UNKNOWN1", target: SimFixture.target).isValid == false)
    }

    @Test("notification history pages with a paginationToken; test notification; consumption; extension")
    func writeAndNotificationEndpoints() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let client = try SimFixture.client(sim)
        let seeded = try Self.seedSubscription(sim, original: "2000000000200000", count: 2)
        let consumable = SimFixture.transaction(original: "2000000000200900", id: "2000000000200900", purchased: SimFixture.now(), type: .consumable)
        try sim.apple.store.upsert([consumable])
        let sentAt = SimFixture.now().addingTimeInterval(-3600)
        for i in 0..<25 {
            try sim.apple.notifications.record(
                SeedNotificationRequest(
                    bundleId: SimFixture.bundleId, notificationType: .didRenew, transactionId: seeded[1].transactionId,
                    sentDate: sentAt.addingTimeInterval(Double(i)), sendAttemptResults: i == 3 ? ["TIMED_OUT"] : nil))
        }
        let request = NotificationHistoryRequest(startDate: sentAt.addingTimeInterval(-60), endDate: SimFixture.now().addingTimeInterval(60))
        let page = try await client.notificationHistoryPage(request, target: SimFixture.target)
        #expect(page.entries.count == 20)
        #expect(page.hasMore && page.paginationToken != nil)
        let history = try await client.notificationHistory(request, target: SimFixture.target)
        #expect(history.count == 25)
        #expect(
            history.allSatisfy {
                $0.notification.payload.notificationType == .didRenew && $0.notification.transaction?.transactionId == seeded[1].transactionId
            })
        var failures = request
        failures.onlyFailures = true
        #expect(try await client.notificationHistory(failures, target: SimFixture.target).count == 1)
        var both = request
        both.transactionId = seeded[0].transactionId
        both.notificationType = .didRenew
        await #expect(throws: AppStoreAPIError.self) { try await client.notificationHistoryPage(both, target: SimFixture.target) }
        do {
            _ = try await client.notificationHistoryPage(both, target: SimFixture.target)
        } catch {
            #expect(error.errorCode == 4_000_019)
            #expect(!error.isTransient)
        }

        let token = try await client.requestTestNotification(target: SimFixture.target)
        let test = try await client.testNotificationStatus(token: token, target: SimFixture.target)
        #expect(test.notification.payload.notificationType == .test)
        do {
            _ = try await client.testNotificationStatus(token: "unknown_1", target: SimFixture.target)
            Issue.record("an unknown token must fail")
        } catch {
            #expect(error.code.rawValue == "apple_api.4040008")
        }

        try await client.sendConsumptionInformation(
            transactionId: "2000000000200900",
            ConsumptionRequest(
                customerConsented: true, sampleContentProvided: false, deliveryStatus: "DELIVERED", consumptionPercentage: 25_000,
                refundPreference: "DECLINE"), target: SimFixture.target)
        #expect(sim.apple.store.receivedConsumption.map(\.transactionId) == ["2000000000200900"])
        do {
            try await client.sendConsumptionInformation(
                transactionId: "2000000000200900",
                ConsumptionRequest(customerConsented: false, sampleContentProvided: false, deliveryStatus: "DELIVERED"),
                target: SimFixture.target)
            Issue.record("consent is required")
        } catch {
            #expect(error.errorCode == 4_000_035)
        }

        let before = try await client.transactionInfo(transactionId: seeded[1].transactionId!, target: SimFixture.target).expiresDate!
        let extended = try await client.extendRenewalDate(
            originalTransactionId: "2000000000200000", ExtendRenewalDateRequest(extendByDays: 7, extendReasonCode: 3, requestIdentifier: "ext-1"),
            target: SimFixture.target)
        #expect(extended.success == true)
        #expect(extended.effectiveDate == before.addingTimeInterval(7 * 86_400))
        do {
            _ = try await client.extendRenewalDate(
                originalTransactionId: "2000000000200000",
                ExtendRenewalDateRequest(extendByDays: 91, extendReasonCode: 3, requestIdentifier: "ext-2"),
                target: SimFixture.target)
            Issue.record("more than 90 days must fail")
        } catch {
            #expect(error.errorCode == 4_000_009)
        }
    }

    @Test(
        "mass extension: Apple's checks (4000009, 4000010, 4000023, 4000027, 4000028, 4040009), then in the background every active subscriber of the product in the storefronts extended, the ineligible failed, one summary"
    )
    func massExtension() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let client = try SimFixture.client(sim)
        let target = SimFixture.target
        let extended = try Self.seedSubscription(sim, original: "2000000000300000", count: 2)
        let elsewhere = try Self.seedSubscription(sim, original: "2000000000310000", count: 2)
        for t in elsewhere { sim.apple.store.modifyTransaction(t.transactionId!) { $0.storefront = "GBR" } }
        _ = try Self.seedSubscription(sim, original: "2000000000320000", count: 2)
        sim.apple.store.setSubscription("2000000000320000", SimulatedSubscriptionOverride(status: .billingRetry))
        let expired = SimFixture.transaction(
            original: "2000000000330000", id: "2000000000330000", purchased: SimFixture.now().addingTimeInterval(-60 * 86_400))
        try sim.apple.store.upsert([expired])
        _ = try Self.seedSubscription(sim, original: "2000000000340000", count: 2)
        for i in 0..<2 {
            _ = try await client.extendRenewalDate(
                originalTransactionId: "2000000000340000",
                ExtendRenewalDateRequest(extendByDays: 1, extendReasonCode: 3, requestIdentifier: "single-\(i)"), target: target)
        }

        func mass(
            _ days: Int32 = 5, reason: Int32 = 3, product: String = TestPKI.productID, storefronts: [String]? = ["USA"], id: String
        )
            -> MassExtendRenewalDateRequest
        {
            MassExtendRenewalDateRequest(
                extendByDays: days, extendReasonCode: reason, requestIdentifier: id, storefrontCountryCodes: storefronts, productId: product)
        }
        let refused: [(MassExtendRenewalDateRequest, Int64)] = [
            (mass(91, id: "bad-days"), 4_000_009), (mass(reason: 4, id: "bad-reason"), 4_000_010),
            (mass(product: "com.example.unknown", id: "bad-product"), 4_000_023), (mass(storefronts: [], id: "no-storefronts"), 4_000_027),
            (mass(storefronts: ["us"], id: "bad-storefront"), 4_000_028),
        ]
        for (request, code) in refused {
            do {
                _ = try await client.massExtendRenewalDate(request, target: target)
                Issue.record("\(request.requestIdentifier ?? "") must be refused")
            } catch {
                #expect(error.errorCode == code)
            }
        }
        do {
            _ = try await client.massExtensionStatus(productId: TestPKI.productID, requestIdentifier: "bad-days", target: target)
            Issue.record("a refused request has no status")
        } catch {
            #expect(error.statusCode == 404 && error.errorCode == 4_040_009)
        }

        let before = try await client.transactionInfo(transactionId: extended[1].transactionId!, target: target).expiresDate!
        let requestID = UUID().uuidString
        #expect(try await client.massExtendRenewalDate(mass(id: requestID), target: target).requestIdentifier == requestID)
        #expect(try await client.massExtendRenewalDate(mass(id: requestID), target: target).requestIdentifier == requestID, "answered again")
        var status = try await client.massExtensionStatus(productId: TestPKI.productID, requestIdentifier: requestID, target: target)
        while status.complete != true {
            try await Task.sleep(for: .milliseconds(20))
            status = try await client.massExtensionStatus(productId: TestPKI.productID, requestIdentifier: requestID, target: target)
        }
        #expect(status.requestIdentifier == requestID && status.completeDate != nil)
        #expect(status.succeededCount == 1, "only the active subscriber in the USA")
        #expect(status.failedCount == 2, "the one in billing retry and the one extended twice this year")
        let after = try await client.transactionInfo(transactionId: extended[1].transactionId!, target: target).expiresDate!
        #expect(after == before.addingTimeInterval(5 * 86_400))
        #expect(try await client.transactionInfo(transactionId: elsewhere[1].transactionId!, target: target).expiresDate == elsewhere[1].expiresDate)
        #expect(sim.apple.store.appliedExtensions.last?.originalTransactionId == "2000000000300000")
        #expect(sim.apple.store.appliedExtensions.last?.newExpiry == after)

        let history = try await client.notificationHistory(
            NotificationHistoryRequest(startDate: SimFixture.now().addingTimeInterval(-600), endDate: SimFixture.now().addingTimeInterval(60)),
            target: target)
        let renewed = history.filter { $0.notification.payload.notificationType == .renewalExtended }
        #expect(renewed.contains { $0.notification.transaction?.originalTransactionId == "2000000000300000" })
        let failed = history.filter { $0.notification.payload.notificationType == .renewalExtension && $0.notification.payload.subtype == .failure }
        #expect(Set(failed.compactMap { $0.notification.transaction?.originalTransactionId }) == ["2000000000320000", "2000000000340000"])
        #expect(failed.allSatisfy { $0.notification.renewalInfo != nil })
        let summaries = history.compactMap { $0.notification.payload.summary }
        #expect(
            summaries == [
                Summary(
                    environment: .sandbox, appAppleId: summaries.first?.appAppleId, bundleId: SimFixture.bundleId, productId: TestPKI.productID,
                    requestIdentifier: requestID, storefrontCountryCodes: ["USA"], succeededCount: 1, failedCount: 2)
            ])
        #expect(history.filter { $0.notification.payload.subtype == .summary }.allSatisfy { $0.notification.payload.data == nil })
    }

    @Test(
        "Set App Account Token: Apple's rules (4000183, 4000187, 4000185, 4040010); the token then names the customer in history, later transactions and renewal info"
    )
    func setAppAccountToken() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let client = try SimFixture.client(sim)
        let seeded = try Self.seedSubscription(sim, original: "2000000000250000", count: 3, token: UUID())
        let customer = UUID()
        try await client.setAppAccountToken(originalTransactionId: "2000000000250000", appAccountToken: customer, target: SimFixture.target)
        let history = try await client.transactionHistory(transactionId: "2000000000250000", target: SimFixture.target)
        #expect(history.count == 3 && history.allSatisfy { $0.appAccountToken == customer })
        let statuses = try await client.allSubscriptionStatuses(transactionId: "2000000000250000", target: SimFixture.target)
        #expect(
            !statuses.isEmpty && statuses.allSatisfy { $0.renewalInfo?.appAccountToken == customer && $0.transaction?.appAccountToken == customer })
        // A renewal Apple records later carries the token too.
        let renewal = SimFixture.transaction(original: "2000000000250000", id: "2000000000250000003", purchased: SimFixture.now())
        try sim.apple.store.upsert([renewal])
        #expect(try await client.transactionInfo(transactionId: renewal.transactionId!, target: SimFixture.target).appAccountToken == customer)

        var family = SimFixture.transaction(original: "2000000000260000", id: "2000000000260000", purchased: SimFixture.now())
        family.inAppOwnershipType = .familyShared
        try sim.apple.store.upsert([family])
        let refusals: [(String, Int64)] = [
            (seeded[1].transactionId!, 4_000_187), ("2000000000260000", 4_000_185), ("2000000000279999", 4_040_010),
        ]
        for (id, code) in refusals {
            do {
                try await client.setAppAccountToken(originalTransactionId: id, appAccountToken: customer, target: SimFixture.target)
                Issue.record("\(id) must be refused")
            } catch {
                #expect(error.errorCode == code, "\(id): \(error)")
                #expect(!error.isTransient)
            }
        }
        // Not a UUID: Apple's own body rule, checked before anything else.
        var request = HTTPClientRequest(url: "\(sim.baseURL)/inApps/v1/transactions/2000000000250000/appAccountToken")
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(try RequestToken.make(credentials: SimFixture.credentials))")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"appAccountToken":"not-a-uuid"}"#))
        let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
        let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
        #expect(response.status.code == 400 && body.contains("4000183"), "\(body)")
    }

    @Test(
        "Get App Transaction Info: the customer's app transaction, verified, found by any of their transaction IDs or its own ID; 4040019 otherwise")
    func appTransactionInfo() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let client = try SimFixture.client(sim)
        let seeded = try Self.seedSubscription(sim, original: "2000000000270000", count: 2)
        let byOriginal = try await client.appTransactionInfo(transactionId: "2000000000270000", target: SimFixture.target)
        let appTransactionId = try #require(byOriginal.appTransactionId)
        #expect(byOriginal.bundleId == SimFixture.bundleId && byOriginal.receiptType == .sandbox)
        #expect(byOriginal.originalPurchaseDate == seeded.compactMap(\.originalPurchaseDate).min())
        let byRenewal = try await client.appTransactionInfo(transactionId: seeded[1].transactionId!, target: SimFixture.target)
        let byOwnID = try await client.appTransactionInfo(transactionId: appTransactionId, target: SimFixture.target)
        #expect(byRenewal.appTransactionId == appTransactionId && byOwnID.appTransactionId == appTransactionId)
        // RESCIND_CONSENT is about the app: `appData` with the same app transaction, signed, and no `data`.
        let rescinded = try sim.apple.notifications.record(
            SeedNotificationRequest(bundleId: SimFixture.bundleId, notificationType: .rescindConsent, transactionId: seeded[1].transactionId))
        let verified = try await SimFixture.verifier().verifyNotification(signedPayload: rescinded.signedPayload)
        #expect(verified.payload.data == nil && verified.transaction == nil)
        #expect(verified.payload.appData?.bundleId == SimFixture.bundleId && verified.appTransaction?.appTransactionId == appTransactionId)
        do {
            _ = try await client.appTransactionInfo(transactionId: "2000000000279998", target: SimFixture.target)
            Issue.record("an unknown transaction has no app transaction")
        } catch {
            #expect(error.errorCode == 4_040_019 && !error.isTransient, "\(error)")
        }
    }

    @Test("the simulator checks the token like Apple: a wrong key, a wrong issuer, an expired or too long-lived token get 401")
    func tokenChecks() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        _ = try Self.seedSubscription(sim, original: "2000000000300000", count: 1)
        let wrongKey = AppStoreAPICredentials(
            bundleId: SimFixture.bundleId, issuerID: SimFixture.apiKey.issuerID, keyID: SimFixture.apiKey.keyID, privateKey: P256.Signing.PrivateKey()
        )
        let wrongIssuer = AppStoreAPICredentials(
            bundleId: SimFixture.bundleId, issuerID: UUID().uuidString, keyID: SimFixture.apiKey.keyID, privateKey: SimFixture.apiKey.privateKey)
        for credentials in [wrongKey, wrongIssuer] {
            let client = try SimFixture.client(sim, credentials: credentials)
            do {
                _ = try await client.transactionInfo(transactionId: "2000000000300000000", target: SimFixture.target)
                Issue.record("\(credentials) must be refused")
            } catch {
                #expect(error.kind == .unauthorized)
                #expect(error.statusCode == 401)
                #expect(error.code == .unauthorized)
                #expect(error.isTransient, "a refused key is an outage of every request, waited out, not the record's fault")
            }
        }
        // Tokens signed by hand: expired, longer than 60 minutes, wrong audience; and the good one.
        let key = SimFixture.apiKey
        let now = Int64(Date().timeIntervalSince1970)
        func status(_ claims: RequestToken.Claims, header: RequestToken.Header = .init(kid: SimFixture.apiKey.keyID)) async throws -> UInt {
            let token = try RequestToken.sign(header: header, claims: claims, key: key.privateKey)
            var request = HTTPClientRequest(url: sim.baseURL + "/inApps/v1/transactions/2000000000300000000")
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
            _ = try await response.body.collect(upTo: 1 << 16)
            return response.status.code
        }
        let good = RequestToken.Claims(iss: key.issuerID, iat: now, exp: now + 300, aud: RequestToken.audience, bid: SimFixture.bundleId)
        #expect(try await status(good) == 200)
        var expired = good
        (expired.iat, expired.exp) = (now - 900, now - 300)
        #expect(try await status(expired) == 401)
        var tooLong = good
        tooLong.exp = now + 3601
        #expect(try await status(tooLong) == 401)
        var audience = good
        audience.aud = "appstoreconnect-v2"
        #expect(try await status(audience) == 401)
        #expect(try await status(good, header: .init(alg: "ES384", kid: key.keyID)) == 401)
        #expect(try await status(good, header: .init(kid: "OTHERKEY")) == 401)
        // The client's own tokens carry Apple's header and claims.
        let token = try RequestToken.make(credentials: SimFixture.credentials, now: Date(timeIntervalSince1970: 1_800_000_000))
        let parts = token.split(separator: ".")
        let header = try JSONDecoder().decode(RequestToken.Header.self, from: Data(Base64.decodeURL(parts[0])!))
        let claims = try JSONDecoder().decode(RequestToken.Claims.self, from: Data(Base64.decodeURL(parts[1])!))
        #expect(header == RequestToken.Header(alg: "ES256", kid: key.keyID, typ: "JWT"))
        #expect(
            claims
                == RequestToken.Claims(iss: key.issuerID, iat: 1_800_000_000, exp: 1_800_000_300, aud: "appstoreconnect-v1", bid: SimFixture.bundleId)
        )
    }

    @Test("every request carries a newly signed token, as Apple's page and libraries say; a refused one does not linger")
    func tokenPerRequest() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        _ = try Self.seedSubscription(sim, original: "2000000000400000", count: 1)
        let skew = Atomic<Int>(0)
        let client = try AppStoreServerAPIClient(
            configuration: .init(credentials: [SimFixture.credentials], baseURLOverride: sim.baseURL, rateLimits: RateLimitPolicy(scale: 1000)),
            httpClient: LocalHTTP.client, verifier: SimFixture.verifier(), logger: TestServices.logger,
            clock: { Date().addingTimeInterval(Double(skew.load(ordering: .relaxed))) })
        let id = "2000000000400000000"
        for _ in 0..<5 { _ = try await client.transactionInfo(transactionId: id, target: SimFixture.target) }
        #expect(client.tokensSigned == 5)
        #expect(client.requestsSent == 5)

        // A clock ahead of Apple's by more than Apple's 60 s leeway: Apple refuses the token.
        skew.store(151, ordering: .relaxed)
        await #expect(throws: AppStoreAPIError.self) { try await client.transactionInfo(transactionId: id, target: SimFixture.target) }
        // Once the clock is right the next request's own token is accepted.
        skew.store(0, ordering: .relaxed)
        _ = try await client.transactionInfo(transactionId: id, target: SimFixture.target)
        #expect(client.tokensSigned == 7)
        #expect(client.requestsSent == 7)
    }
}
