import AppStore
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import SimulatedCustomers
import SimulatedDelivery
import SimulatorLifecycleRoutes
import Synchronization
import Testing

@Suite("The simulated Apple plays lifecycles with signed notifications", .timeLimit(.minutes(15)))
struct SimulatorLifecycleTests {
    static let bundleId = "com.example.entitlements"
    static let authority: SigningAuthority = try! SigningAuthority(options: SigningAuthorityOptions(name: "Lifecycle Tests"))

    /// A webhook that verifies each notification as the pipeline would and keeps what it decoded.
    final class VerifyingWebhook: Sendable {
        let verifier: SignedDataVerifier
        let received = Mutex([String: VerifiedNotification]())
        let failures = Mutex([String]())

        init() throws {
            verifier = try SignedDataVerifier(
                configuration: .init(
                    apps: [try AppStoreApp(bundleId: SimulatorLifecycleTests.bundleId, environments: [.sandbox])],
                    additionalTrustedRoots: [SimulatorLifecycleTests.authority.root]))
        }

        func application() -> some ApplicationProtocol {
            let router = Router()
            router.post("/v2/notifications") { request, _ -> HTTPResponse.Status in
                let body = try await request.body.collect(upTo: 1 << 20)
                let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: String]
                do {
                    let verified = try await self.verifier.verifyNotification(signedPayload: json?["signedPayload"] ?? "")
                    self.received.withLock { $0[verified.payload.notificationUUID ?? ""] = verified }
                    return .ok
                } catch {
                    self.failures.withLock { $0.append("\(error)") }
                    return .badRequest
                }
            }
            router.post("/v1/transactions") { _, _ -> HTTPResponse.Status in .ok }
            router.post("/v1/receipts") { _, _ -> HTTPResponse.Status in .ok }
            return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        }
    }

    @Test("every notification verifies against the simulator's root and says what the step says")
    func signedAndFaithful() async throws {
        let apple = try SimulatedApple(
            authority: Self.authority,
            apiKey: SimulatorAPIKey(issuerID: "issuer", keyID: "KEY0000001", privateKey: P256.Signing.PrivateKey()))
        let customers = LifecycleSimulation(catalog: .standard(bundleId: Self.bundleId), month: 600, horizon: Date(), seed: 3)
            .customers(LifecycleScenario.allCases.count)
        let webhook = try VerifyingWebhook()
        var deliveryOptions = DeliveryOptions()
        deliveryOptions.duplicateRate = 0.2
        let options = deliveryOptions
        let report = try await webhook.application().test(.live) { client in
            try await LifecyclePlayer(
                records: SimulatorLifecycleRecords(apple: apple, bundleId: Self.bundleId),
                webhook: "http://127.0.0.1:\(client.port!)", options: options, seed: 5, client: .shared
            ).play(customers)
        }
        #expect(webhook.failures.withLock { $0 }.isEmpty)
        let received = webhook.received.withLock { $0 }
        // Every notification but the ones Apple never manages to deliver (refund-never-delivered).
        let neverDelivered = customers.flatMap(\.steps).compactMap(\.notification).filter(\.neverDelivered).count
        #expect(neverDelivered == 1)
        #expect(received.count == report.notifications - neverDelivered)
        #expect(report.dropped == neverDelivered)
        let expectedKinds = customers.flatMap(\.steps).compactMap(\.notification).filter { !$0.neverDelivered }.map {
            "\($0.type.rawValue)/\($0.subtype?.rawValue ?? "")"
        }.sorted()
        let receivedKinds = received.values.map { "\($0.payload.notificationType?.rawValue ?? "")/\($0.payload.subtype?.rawValue ?? "")" }.sorted()
        #expect(receivedKinds == expectedKinds)

        // A consumption request carries its reason; subscription notifications their renewal info and status.
        #expect(
            received.values.contains {
                $0.payload.notificationType == .consumptionRequest && $0.payload.data?.consumptionRequestReason == .unsatisfiedWithPurchase
            })
        let grace = try #require(received.values.first { $0.payload.notificationType == .didFailToRenew && $0.payload.subtype == .gracePeriod })
        #expect(grace.payload.data?.status == .billingGracePeriod)
        #expect(grace.renewalInfo?.isInBillingRetryPeriod == true && grace.renewalInfo?.gracePeriodExpiresDate != nil)

        // Apple re-assigned a token: the renewal after it names the new customer, the purchase
        // notification the one before.
        let reassigned = try #require(customers.first { $0.scenario == .tokenReassigned })
        let reassignedNotes = received.values.filter { $0.transaction?.originalTransactionId == reassigned.transactions[0].transactionId }
        #expect(reassignedNotes.first { $0.payload.notificationType == .didRenew }?.transaction?.appAccountToken == reassigned.customer)
        #expect(
            reassignedNotes.first { $0.payload.notificationType == .subscribed }?.transaction?.appAccountToken == reassigned.formerCustomers.first)
        // The StoreKit 1 receipt the simulator mints names the purchase, as Apple's ReceiptUtility reads it.
        let receiptStep = try #require(customers.flatMap(\.steps).compactMap(\.upload).first { $0.kind == .appReceipt })
        let receipt = try await SimulatorLifecycleRecords(apple: apple, bundleId: Self.bundleId).appReceipt(receiptStep.transactionId)
        #expect(try LegacyReceipt.transactionID(appReceipt: receipt) == receiptStep.transactionId)

        // The simulator's records end as the builder's: each customer's transactions, final state.
        for customer in customers {
            let stored = apple.store.transactions(customerID: customer.customer.uuidString.lowercased(), bundleId: Self.bundleId)
                .map(\.payload).sorted { $0.transactionId! < $1.transactionId! }
            #expect(stored.map(\.transactionId) == customer.transactions.map(\.transactionId).sorted { ($0 ?? "") < ($1 ?? "") })
            #expect(stored.map(\.revocationDate) == customer.transactions.sorted { $0.transactionId! < $1.transactionId! }.map(\.revocationDate))
        }
    }
}
