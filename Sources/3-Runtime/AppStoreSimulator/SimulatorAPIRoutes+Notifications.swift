import AppStore
import AppStoreServerAPI
import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// Get Notification History, Request a Test Notification and Get Test Notification Status.
extension SimulatorAPIRoutes {
    /// The largest request body the simulator reads, as Apple bounds its requests.
    static let maximumBody = 1 << 20

    func notificationHistory(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) async throws -> Response {
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
            originalID = try customer(of: transactionID, bundleId: bundleId).payload.originalTransactionId
        }
        let clampedEnd = min(end, now.addingTimeInterval(1))
        let matching = store.notifications(bundleId: bundleId).filter { n in
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

    func requestTestNotification(_ bundleId: String) throws -> Response {
        let uuid = UUID().uuidString.lowercased()
        let now = store.now()
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .test, notificationUUID: uuid,
            data: NotificationData(environment: .sandbox, appAppleId: store.appAppleIds[bundleId], bundleId: bundleId),
            version: "2.0", signedDate: now)
        let token = "\(uuid)_\(AppStoreJSON.milliseconds(since1970: now))"
        // Lifecycle notifications are posted by a lifecycle driver; TEST ones go to the configured webhook, if any.
        let notification = SimulatedNotification(
            bundleId: bundleId, notificationUUID: uuid, notificationType: .test, subtype: nil, firstSentDate: now,
            signedPayload: try signing.sign(payload: payload), sendAttempts: [])
        store.state.withLock { $0.testNotifications[token] = notification }
        TestNotificationDelivery(store: store).deliver(token: token)
        return try Self.json(SendTestNotificationResponse(testNotificationToken: token))
    }

    func testNotificationStatus(_ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        guard let token = context.parameters.get("token"), token.contains("_") else {
            throw SimulatorError.badRequest(4_000_020, "Invalid test notification token.")
        }
        guard let notification = store.state.withLock({ $0.testNotifications[token] }), notification.bundleId == bundleId else {
            throw SimulatorError.notFound(4_040_008, "Test notification not found.")
        }
        return try Self.json(CheckTestNotificationResponse(signedPayload: notification.signedPayload, sendAttempts: notification.sendAttempts))
    }
}
