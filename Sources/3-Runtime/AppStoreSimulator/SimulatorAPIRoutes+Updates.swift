import AppStore
import AppStoreServerAPI
import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// What an app sends Apple: Send Consumption Information, Extend a Subscription Renewal Date and
/// Set App Account Token.
extension SimulatorAPIRoutes {
    func consumption(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) async throws -> Response {
        let id = try Self.transactionID(context)
        let bytes = try await request.body.collect(upTo: Self.maximumBody)
        guard let body = try? AppStoreJSON.decoder.decode(ConsumptionRequest.self, from: Data(bytes.readableBytesView)) else {
            throw SimulatorError.badRequest(4_000_000, "Invalid request.")
        }
        guard body.customerConsented == true else { throw SimulatorError.badRequest(4_000_035, "Invalid customer consented.") }
        guard body.sampleContentProvided != nil else { throw SimulatorError.badRequest(4_000_041, "Invalid sample content provided.") }
        guard let delivery = body.deliveryStatus, ConsumptionRequest.deliveryStatuses.contains(delivery) else {
            throw SimulatorError.badRequest(4_000_036, "Invalid delivery status.")
        }
        if let preference = body.refundPreference, !ConsumptionRequest.refundPreferences.contains(preference) {
            throw SimulatorError.badRequest(4_000_044, "Invalid refund preference.")
        }
        guard let stored = store.transaction(anyID: id, bundleId: bundleId), stored.payload.transactionId == id else {
            throw SimulatorError.notFound(4_040_010, "Transaction id not found.")
        }
        if let percentage = body.consumptionPercentage {
            if stored.payload.type == .autoRenewableSubscription {
                throw SimulatorError.badRequest(4_000_209, "Consumption percentage not allowed for auto-renewable subscriptions.")
            }
            guard (0...100_000).contains(percentage), delivery == "DELIVERED" || percentage == 0 else {
                throw SimulatorError.badRequest(4_000_000, "Invalid consumption percentage.")
            }
        }
        let received = ReceivedConsumption(bundleId: bundleId, transactionId: id, request: body, receivedAt: store.now())
        store.state.withLock { $0.consumption.append(received) }
        return Response(status: .accepted)
    }

    /// What both extension endpoints check alike, with Apple's codes: days 1...90, a reason code
    /// 0...3, a request identifier of 1...128 characters.
    static func extensionTerms(days: Int32?, reason: Int32?, requestIdentifier: String?) throws -> (days: Int32, requestID: String) {
        guard let days, (1...90).contains(days) else { throw SimulatorError.badRequest(4_000_009, "Invalid extend by days.") }
        guard let reason, (0...3).contains(reason) else { throw SimulatorError.badRequest(4_000_010, "Invalid extend reason code.") }
        guard let requestIdentifier, !requestIdentifier.isEmpty, requestIdentifier.count <= 128 else {
            throw SimulatorError.badRequest(4_000_011, "Invalid request identifier.")
        }
        return (days, requestIdentifier)
    }

    func extend(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) async throws -> Response {
        let original = try Self.transactionID(context)
        let bytes = try await request.body.collect(upTo: Self.maximumBody)
        guard let body = try? AppStoreJSON.decoder.decode(ExtendRenewalDateRequest.self, from: Data(bytes.readableBytesView)) else {
            throw SimulatorError.badRequest(4_000_000, "Invalid request.")
        }
        let (days, requestID) = try Self.extensionTerms(
            days: body.extendByDays, reason: body.extendReasonCode, requestIdentifier: body.requestIdentifier)
        if let earlier = store.state.withLock({ $0.extensionRequests[requestID] }) { return try Self.json(earlier) }
        guard let owner = store.transaction(anyID: original, bundleId: bundleId), owner.payload.originalTransactionId == original,
            let latest = signing.latestSubscriptionTransactions(customerID: owner.customerID, bundleId: bundleId)
                .first(where: { $0.originalTransactionId == original })
        else { throw SimulatorError.notFound(4_040_005, "Original transaction id not found.") }
        if latest.inAppOwnershipType == .familyShared {
            throw SimulatorError(.forbidden, 4_030_007, "Family-shared subscription extension ineligible.")
        }
        guard signing.status(of: latest) == .active, let expires = latest.expiresDate, let latestID = latest.transactionId else {
            throw SimulatorError(.forbidden, 4_030_004, "Subscription extension ineligible.")
        }
        let now = store.now()
        let recent = store.state.withLock { ($0.extensions[original] ?? []).filter { $0 > now.addingTimeInterval(-365 * 86_400) } }
        guard recent.count < 2 else { throw SimulatorError(.forbidden, 4_030_005, "Subscription max extension.") }
        let newExpiry = expires.addingTimeInterval(Double(days) * 86_400)
        store.modifyTransaction(latestID) { $0.expiresDate = newExpiry }
        store.recordAppliedExtension(
            SimulatedExtension(
                originalTransactionId: original, productId: latest.productId, appAccountToken: latest.appAccountToken, previousExpiry: expires,
                newExpiry: newExpiry))
        let answer = ExtendRenewalDateResponse(
            originalTransactionId: original, webOrderLineItemId: latest.webOrderLineItemId, success: true, effectiveDate: newExpiry)
        store.state.withLock { state in
            state.extensions[original, default: []].append(now)
            state.extensionRequests[requestID] = answer
        }
        try announce(.renewalExtended, transactionId: latestID, bundleId: bundleId)
        return try Self.json(answer)
    }

    /// Set App Account Token, with Apple's rules: a UUID body (`4000183`), an original transaction
    /// ID (`4000187` for a later transaction's), never a family member's purchase (`4000185`). Every
    /// transaction of the purchase, later ones and the renewal info carry the new token from now on.
    func setAppAccountToken(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) async throws -> Response {
        let id = try Self.transactionID(context)
        let bytes = try await request.body.collect(upTo: Self.maximumBody)
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView)) as? [String: Any] else {
            throw SimulatorError.badRequest(4_000_000, "Invalid request.")
        }
        guard let text = object["appAccountToken"] as? String, let token = UUID(uuidString: text) else {
            throw SimulatorError.badRequest(4_000_183, "Invalid app account token UUID.")
        }
        guard let stored = store.transaction(anyID: id, bundleId: bundleId) else {
            throw SimulatorError.notFound(4_040_010, "Transaction id not found.")
        }
        guard stored.payload.originalTransactionId == id else {
            throw SimulatorError.badRequest(4_000_187, "The transaction id is not an original transaction id.")
        }
        guard stored.payload.inAppOwnershipType != .familyShared else {
            throw SimulatorError.badRequest(4_000_185, "Family transactions are not supported.")
        }
        store.setAppAccountToken(token, originalTransactionId: id, bundleId: bundleId)
        return Response(status: .ok)
    }

    /// Get App Transaction Info: the customer's app transaction, found by any of their transaction
    /// IDs or by its `appTransactionId` (the one their transactions carry, or one derived from who
    /// they are); 404
    /// `4040019` when neither names a customer of the app.
    func appTransactionInfo(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        let id = try Self.transactionID(context)
        let customer =
            store.transaction(anyID: id, bundleId: bundleId)?.customerID
            ?? store.customerIDs(bundleId: bundleId).first { SimulatorStore.appTransactionId(ofCustomer: $0) == id }
        guard let customer else { throw SimulatorError.notFound(4_040_019, "App transaction does not exist.") }
        let app = store.appTransaction(ofCustomer: customer, bundleId: bundleId)
        return try Self.json(AppTransactionInfoResponse(signedAppTransactionInfo: try signing.sign(payload: app)))
    }

    /// Apple's notification about a change an API call made (`RENEWAL_EXTENDED` after an
    /// extension, a mass extension's `RENEWAL_EXTENSION`): recorded in the notification history and,
    /// when a webhook is set, delivered in the background with its attempt recorded, as Apple does
    /// after answering the call.
    func announce(
        _ type: NotificationType, _ subtype: NotificationSubtype? = nil, transactionId: String? = nil, summary: Summary? = nil,
        bundleId: String
    ) throws {
        let notification: SimulatedNotification
        do {
            notification = try SimulatorNotifications(store: store, signing: signing).record(
                SeedNotificationRequest(
                    bundleId: bundleId, notificationType: type, subtype: subtype, transactionId: transactionId, sendAttemptResults: [],
                    summary: summary))
        } catch {
            throw SimulatorError.badRequest(4_000_000, "Invalid request.")
        }
        guard let url = store.webhookURL else { return }
        let store = self.store
        Task {
            let result = await TestNotificationDelivery.post(signedPayload: notification.signedPayload, to: url)
            store.recordSendAttempt(notificationUUID: notification.notificationUUID, result: result, at: store.now())
        }
    }
}
