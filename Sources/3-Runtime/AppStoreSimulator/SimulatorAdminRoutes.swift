import AppStore
import AppStoreServerAPI
import AppStoreSigning
import Foundation
import Hummingbird
import NIOCore
import X509

/// The `/sim` routes: seed and change data, inject faults, read counters, fetch the CA root. No
/// authentication: the simulator listens on loopback for tests and local runs only.
struct SimulatorAdminRoutes: Sendable {
    let store: SimulatorStore
    let signing: SimulatorSigning
    let faults: FaultInjector
    let rootPEM: String
    let apiKey: SimulatorAPIKey
    let ocsp: SimulatedOCSP

    struct KeyInfo: Codable {
        var issuerId: String
        var keyId: String
        var privateKeyPath: String?
    }

    func register(on router: Router<BasicRequestContext>) {
        router.get("/sim/ca/root.pem") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/x-pem-file"], body: ResponseBody(byteBuffer: ByteBuffer(string: rootPEM)))
        }
        router.get("/sim/api-key") { _, _ in
            try SimulatorAPIRoutes.json(KeyInfo(issuerId: apiKey.issuerID, keyId: apiKey.keyID, privateKeyPath: apiKey.privateKeyPath))
        }
        router.post("/sim/transactions") { request, context in
            let seed = try await decode(SeedTransactionsRequest.self, request)
            do {
                try store.upsert(seed.transactions, customerID: seed.customerId)
            } catch let error as SimulatorInputError {
                throw HTTPError(.badRequest, message: error.description)
            }
            return Response(status: .created)
        }
        router.put("/sim/subscriptions/:originalTransactionId") { request, context in
            let override = try await decode(SimulatedSubscriptionOverride.self, request)
            store.setSubscription(try context.parameters.require("originalTransactionId"), override)
            return Response(status: .noContent)
        }
        router.post("/sim/notifications") { request, context in
            let seed = try await decode(SeedNotificationRequest.self, request)
            do {
                let notification = try SimulatorNotifications(store: store, signing: signing).record(seed)
                return try SimulatorAPIRoutes.json(["notificationUUID": notification.notificationUUID], status: .created)
            } catch let error as SimulatorInputError {
                throw HTTPError(.badRequest, message: error.description)
            }
        }
        router.post("/sim/orders") { request, context in
            let seed = try await decode(SeedOrderRequest.self, request)
            store.addOrder(seed.orderId, transactionIds: seed.transactionIds)
            return Response(status: .created)
        }
        router.get("/sim/webhook") { _, _ in try SimulatorAPIRoutes.json(WebhookSetting(url: store.webhookURL)) }
        router.put("/sim/webhook") { request, context in
            let setting = try await decode(WebhookSetting.self, request)
            guard store.setWebhookURL(setting.url) else { throw HTTPError(.badRequest, message: "url must be an http(s) URL or null") }
            return try SimulatorAPIRoutes.json(WebhookSetting(url: store.webhookURL))
        }
        router.get("/sim/consumption") { _, _ in try SimulatorAPIRoutes.json(store.receivedConsumption) }
        router.get("/sim/faults") { _, _ in try SimulatorAPIRoutes.json(faults.current) }
        router.put("/sim/faults") { request, context in
            faults.set(try await decode(FaultPlan.self, request))
            return try SimulatorAPIRoutes.json(faults.current)
        }
        router.delete("/sim/faults") { _, _ in
            faults.set(.none)
            return Response(status: .noContent)
        }
        router.get("/sim/stats") { _, _ in try SimulatorAPIRoutes.json(faults.statistics) }
        router.delete("/sim/stats") { _, _ in
            faults.resetStatistics()
            return Response(status: .noContent)
        }
        router.post("/sim/reset") { _, _ in
            store.reset()
            ocsp.reset()
            faults.set(.none)
            faults.resetStatistics()
            return Response(status: .noContent)
        }
    }

    func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let body = try await request.body.collect(upTo: 16 << 20)
        do {
            return try AppStoreJSON.decoder.decode(T.self, from: Data(body.readableBytesView))
        } catch {
            throw HTTPError(.badRequest, message: "the body is not a \(T.self) (dates in milliseconds): \(error)")
        }
    }
}

/// Builds and records notifications from the simulator's current data: the notification signed now, the
/// transaction and renewal info it nests as first signed (see ``SignedJWSCache``).
public struct SimulatorNotifications: Sendable {
    let store: SimulatorStore
    let signing: SimulatorSigning

    /// Records a notification as sent at `seed.sentDate`, nesting the named transaction (and the
    /// subscription's renewal info) as they are now.
    @discardableResult
    public func record(_ seed: SeedNotificationRequest) throws -> SimulatedNotification {
        var stored: SimulatedTransaction?
        if let id = seed.transactionId {
            guard let found = store.transaction(anyID: id, bundleId: seed.bundleId) else {
                throw SimulatorInputError("transaction \(id) of \(seed.bundleId) is not stored")
            }
            stored = found
        }
        var transaction = stored?.payload
        let sent = seed.sentDate ?? store.now()
        var data = NotificationData(environment: .sandbox, appAppleId: store.appAppleIds[seed.bundleId], bundleId: seed.bundleId)
        var appData: AppData?
        var externalPurchaseToken: ExternalPurchaseToken?
        data.consumptionRequestReason = seed.consumptionRequestReason
        if seed.notificationType == .externalPurchaseToken {
            // About a token of the External Purchase API: `externalPurchaseToken`, no `data`.
            guard var token = seed.externalPurchaseToken, !(token.externalPurchaseId ?? "").isEmpty else {
                throw SimulatorInputError("EXTERNAL_PURCHASE_TOKEN needs externalPurchaseToken with an externalPurchaseId")
            }
            token.bundleId = seed.bundleId
            token.appAppleId = token.appAppleId ?? store.appAppleIds[seed.bundleId]
            externalPurchaseToken = token
            transaction = nil
        } else if seed.notificationType == .rescindConsent {
            // About the app, not a purchase: `appData` with the customer's app transaction, no `data`.
            guard let customer = stored?.customerID else {
                throw SimulatorInputError("RESCIND_CONSENT needs transactionId: a purchase of the customer whose app transaction it names")
            }
            appData = AppData(
                appAppleId: store.appAppleIds[seed.bundleId], bundleId: seed.bundleId, environment: .sandbox,
                signedAppTransactionInfo: try signing.sign(payload: store.appTransaction(ofCustomer: customer, bundleId: seed.bundleId)))
            transaction = nil
        } else if let transaction {
            data.signedTransactionInfo = try signing.sign(transaction)
            if transaction.type == .autoRenewableSubscription {
                data.signedRenewalInfo = try signing.signedRenewalInfo(of: transaction)
                data.status = signing.status(of: transaction)
            }
        }
        let uuid = UUID().uuidString.lowercased()
        // `data`, `summary`, `externalPurchaseToken` and `appData` are mutually exclusive.
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: seed.notificationType, subtype: seed.subtype, notificationUUID: uuid,
            data: appData == nil && seed.summary == nil && externalPurchaseToken == nil ? data : nil, summary: seed.summary,
            externalPurchaseToken: externalPurchaseToken, appData: appData, version: "2.0", signedDate: sent)
        let attempts = (seed.sendAttemptResults ?? ["SUCCESS"]).enumerated().map { index, result in
            SendAttemptItem(attemptDate: sent.addingTimeInterval(Double(index) * 3600), sendAttemptResult: result)
        }
        let notification = SimulatedNotification(
            bundleId: seed.bundleId, notificationUUID: uuid, notificationType: seed.notificationType, subtype: seed.subtype,
            transactionId: transaction?.transactionId, originalTransactionId: transaction?.originalTransactionId, firstSentDate: sent,
            signedPayload: try signing.sign(payload: payload), sendAttempts: attempts)
        store.addNotification(notification)
        return notification
    }
}
