import AppStore
import AppStoreServerAPI
import Foundation
import Hummingbird
import NIOCore
import Synchronization

extension SimulatorAPIRoutes {
    static let maximumBody = 1 << 20

    func refunds(_ request: Request, _ context: BasicRequestContext, _ bundleID: String) throws -> Response {
        let id = try Self.transactionID(context)
        let owner = try customer(of: id, bundleID: bundleID)
        let refunded = store.transactions(customerID: owner.customerID, bundleID: bundleID).map(\.payload)
            .filter { $0.revocationDate != nil }
            .sorted { ($0.revocationDate!, $0.transactionId ?? "") < ($1.revocationDate!, $1.transactionId ?? "") }
        let offset = try PageToken.offset(
            request.uri.queryParameters.get("revision"), invalidCode: 4_000_005, message: "Invalid request revision.")
        let page = Array(refunded.dropFirst(offset).prefix(Self.pageSize))
        let next = offset + page.count
        return try Self.json(
            RefundHistoryResponse(
                signedTransactions: try page.map { t throws(SimulatorError) in try signing.sign(t) }, revision: PageToken.make(next),
                hasMore: next < refunded.count))
    }

    func orderLookup(_ request: Request, _ context: BasicRequestContext, _ bundleID: String) throws -> Response {
        guard let orderID = context.parameters.get("orderId"), !orderID.isEmpty, orderID.allSatisfy({ $0.isLetter || $0.isNumber }) else {
            return try Self.json(OrderLookupResponse(status: 1, signedTransactions: []))
        }
        let ids = store.state.withLock { $0.orders[orderID] } ?? []
        let transactions = ids.compactMap { store.transaction(anyID: $0, bundleID: bundleID)?.payload }.filter {
            ids.contains($0.transactionId ?? "")
        }
        guard !transactions.isEmpty else { return try Self.json(OrderLookupResponse(status: 1, signedTransactions: [])) }
        return try Self.json(
            OrderLookupResponse(status: 0, signedTransactions: try transactions.map { t throws(SimulatorError) in try signing.signAsOfNow(t) }))
    }

    func notificationHistory(_ request: Request, _ context: BasicRequestContext, _ bundleID: String) async throws -> Response {
        let body = try await request.body.collect(upTo: Self.maximumBody)
        guard let filter = try? AppStoreJSON.decoder.decode(NotificationHistoryRequest.self, from: Data(body.readableBytesView)) else {
            throw SimulatorError.badRequest(4_000_000, "Invalid request.")
        }
        guard let start = filter.startDate else { throw SimulatorError.badRequest(4_000_015, "Invalid start date.") }
        guard let end = filter.endDate else { throw SimulatorError.badRequest(4_000_016, "Invalid end date.") }
        let now = store.now()
        // Sandbox keeps 30 days of history (Production 180).
        guard start >= now.addingTimeInterval(-30 * 86_400) else { throw SimulatorError.badRequest(4_000_012, "Start date too far in past.") }
        guard start < end else { throw SimulatorError.badRequest(4_000_013, "Start date after end date.") }
        if filter.transactionId != nil, filter.notificationType != nil {
            throw SimulatorError.badRequest(4_000_019, "Multiple filters supplied.")
        }
        if filter.notificationSubtype != nil, filter.notificationType == nil {
            throw SimulatorError.badRequest(4_000_018, "Invalid notification type.")
        }
        var originalID: String?
        if let transactionID = filter.transactionId {
            originalID = try customer(of: transactionID, bundleID: bundleID).payload.originalTransactionId
        }
        let clampedEnd = min(end, now.addingTimeInterval(1))
        let matching = store.notifications(bundleID: bundleID).filter { n in
            guard n.firstSentDate >= start, n.firstSentDate < clampedEnd else { return false }
            if let type = filter.notificationType, n.notificationType != type { return false }
            if let subtype = filter.notificationSubtype, n.subtype != subtype { return false }
            if let originalID, n.originalTransactionId != originalID { return false }
            if filter.onlyFailures == true, n.sendAttempts.last?.sendAttemptResult == "SUCCESS" { return false }
            return true
        }
        let offset = try PageToken.offset(
            request.uri.queryParameters.get("paginationToken"), invalidCode: 4_000_014, message: "Invalid pagination token.")
        let page = Array(matching.dropFirst(offset).prefix(Self.pageSize))
        let next = offset + page.count
        return try Self.json(
            NotificationHistoryResponse(
                paginationToken: next < matching.count ? PageToken.make(next) : nil, hasMore: next < matching.count,
                notificationHistory: page.map { NotificationHistoryResponseItem(signedPayload: $0.signedPayload, sendAttempts: $0.sendAttempts) }))
    }

    func requestTestNotification(_ bundleID: String) throws -> Response {
        let uuid = UUID().uuidString.lowercased()
        let now = store.now()
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .test, notificationUUID: uuid,
            data: NotificationData(environment: .sandbox, appAppleId: store.appAppleIDs[bundleID], bundleId: bundleID),
            version: "2.0", signedDate: now)
        let token = "\(uuid)_\(AppStoreJSON.milliseconds(since1970: now))"
        // Lifecycle notifications are posted by a lifecycle driver; TEST ones go to the configured webhook, if any.
        let notification = SimulatedNotification(
            bundleID: bundleID, notificationUUID: uuid, notificationType: .test, subtype: nil, firstSentDate: now,
            signedPayload: try signing.sign(payload: payload), sendAttempts: [])
        store.state.withLock { $0.testNotifications[token] = notification }
        TestNotificationDelivery(store: store).deliver(token: token)
        return try Self.json(SendTestNotificationResponse(testNotificationToken: token))
    }

    func testNotificationStatus(_ context: BasicRequestContext, _ bundleID: String) throws -> Response {
        guard let token = context.parameters.get("token"), token.contains("_") else {
            throw SimulatorError.badRequest(4_000_020, "Invalid test notification token.")
        }
        guard let notification = store.state.withLock({ $0.testNotifications[token] }), notification.bundleID == bundleID else {
            throw SimulatorError.notFound(4_040_008, "Test notification not found.")
        }
        return try Self.json(CheckTestNotificationResponse(signedPayload: notification.signedPayload, sendAttempts: notification.sendAttempts))
    }

    func consumption(_ request: Request, _ context: BasicRequestContext, _ bundleID: String) async throws -> Response {
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
        guard let stored = store.transaction(anyID: id, bundleID: bundleID), stored.payload.transactionId == id else {
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
        let received = ReceivedConsumption(bundleId: bundleID, transactionId: id, request: body, receivedAt: store.now())
        store.state.withLock { $0.consumption.append(received) }
        return Response(status: .accepted)
    }

    func extend(_ request: Request, _ context: BasicRequestContext, _ bundleID: String) async throws -> Response {
        let original = try Self.transactionID(context)
        let bytes = try await request.body.collect(upTo: Self.maximumBody)
        guard let body = try? AppStoreJSON.decoder.decode(ExtendRenewalDateRequest.self, from: Data(bytes.readableBytesView)) else {
            throw SimulatorError.badRequest(4_000_000, "Invalid request.")
        }
        guard let days = body.extendByDays, (1...90).contains(days) else { throw SimulatorError.badRequest(4_000_009, "Invalid extend by days.") }
        guard let reason = body.extendReasonCode, (0...3).contains(reason) else {
            throw SimulatorError.badRequest(4_000_010, "Invalid extend reason code.")
        }
        guard let requestID = body.requestIdentifier, !requestID.isEmpty, requestID.count <= 128 else {
            throw SimulatorError.badRequest(4_000_011, "Invalid request identifier.")
        }
        if let earlier = store.state.withLock({ $0.extensionRequests[requestID] }) { return try Self.json(earlier) }
        guard let owner = store.transaction(anyID: original, bundleID: bundleID), owner.payload.originalTransactionId == original,
            let latest = signing.latestSubscriptionTransactions(customerID: owner.customerID, bundleID: bundleID)
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
        let answer = ExtendRenewalDateResponse(
            originalTransactionId: original, webOrderLineItemId: latest.webOrderLineItemId, success: true, effectiveDate: newExpiry)
        store.state.withLock { state in
            state.extensions[original, default: []].append(now)
            state.extensionRequests[requestID] = answer
        }
        return try Self.json(answer)
    }
}
