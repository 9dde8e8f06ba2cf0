import AppStore
import AppStoreServerAPI
import Foundation
import HTTPTypes
import Hummingbird
import JSONCoding
import NIOCore

/// The `/inApps` routes: Apple's App Store Server API over the ``SimulatorStore``.
struct SimulatorAPIRoutes: Sendable {
    static let pageSize = 20
    let store: SimulatorStore
    let signing: SimulatorSigning
    let faults: FaultInjector
    let tokens: BearerTokenValidator

    func register(on router: Router<BasicRequestContext>) {
        router.get("/inApps/v1/transactions/:id") { request, context in
            try await api("transaction_info", request) { bundleId in try transactionInfo(request, context, bundleId) }
        }
        router.get("/inApps/v2/history/:id") { request, context in
            try await api("transaction_history", request) { bundleId in try history(request, context, bundleId) }
        }
        router.get("/inApps/v1/subscriptions/:id") { request, context in
            try await api("subscription_statuses", request) { bundleId in try statuses(request, context, bundleId) }
        }
        router.get("/inApps/v2/refund/lookup/:id") { request, context in
            try await api("refund_history", request) { bundleId in try refunds(request, context, bundleId) }
        }
        router.get("/inApps/v1/lookup/:orderId") { request, context in
            try await api("order_lookup", request) { bundleId in try orderLookup(request, context, bundleId) }
        }
        router.post("/inApps/v1/notifications/history") { request, context in
            try await api("notification_history", request) { bundleId in try await notificationHistory(request, context, bundleId) }
        }
        router.post("/inApps/v1/notifications/test") { request, context in
            try await api("request_test_notification", request) { bundleId in try requestTestNotification(bundleId) }
        }
        router.get("/inApps/v1/notifications/test/:token") { request, context in
            try await api("test_notification_status", request) { bundleId in try testNotificationStatus(context, bundleId) }
        }
        router.put("/inApps/v2/transactions/consumption/:id") { request, context in
            try await api("send_consumption", request) { bundleId in try await consumption(request, context, bundleId) }
        }
        router.post("/inApps/v1/subscriptions/extend/mass") { request, context in
            try await api("mass_extend_renewal_date", request) { bundleId in try await massExtend(request, context, bundleId) }
        }
        router.get("/inApps/v1/subscriptions/extend/mass/:productId/:requestIdentifier") { request, context in
            try await api("mass_extension_status", request) { bundleId in try massExtensionStatus(context, bundleId) }
        }
        router.put("/inApps/v1/subscriptions/extend/:id") { request, context in
            try await api("extend_renewal_date", request) { bundleId in try await extend(request, context, bundleId) }
        }
        router.get("/inApps/v1/transactions/appTransactions/:id") { request, context in
            try await api("app_transaction_info", request) { bundleId in try appTransactionInfo(request, context, bundleId) }
        }
        router.put("/inApps/v1/transactions/:id/appAccountToken") { request, context in
            try await api("set_app_account_token", request) { bundleId in try await setAppAccountToken(request, context, bundleId) }
        }
    }

    /// Faults, then the token, then the handler; every answer is counted.
    func api(_ endpoint: String, _ request: Request, _ handler: (String) async throws -> Response) async throws -> Response {
        let claimed = tokens.bundleId(authorization: request.headers[.authorization])
        if let fault = await faults.apply(bundleId: claimed ?? "-", endpoint: endpoint) {
            faults.record(endpoint: endpoint, status: Int(fault.status.code), injected: true)
            throw fault
        }
        do {
            guard let bundleId = claimed else { throw SimulatorError.unauthorized }
            let response = try await handler(bundleId)
            faults.record(endpoint: endpoint, status: Int(response.status.code), injected: false)
            return response
        } catch let error as SimulatorError {
            faults.record(endpoint: endpoint, status: Int(error.status.code), injected: false)
            throw error
        } catch {
            faults.record(endpoint: endpoint, status: 400, injected: false)
            throw SimulatorError.badRequest(4_000_000, "Invalid request.")
        }
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try StreamingJSONEncoder.encode(value)
        return Response(
            status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// A transaction ID from the path: numeric, like Apple's.
    static func transactionID(_ context: BasicRequestContext, name: String = "id") throws(SimulatorError) -> String {
        guard let id = context.parameters.get(name), !id.isEmpty, id.allSatisfy(\.isNumber) else {
            throw SimulatorError.badRequest(4_000_006, "Invalid transaction id.")
        }
        return id
    }

    /// The customer the ID belongs to in this app.
    func customer(of id: String, bundleId: String) throws(SimulatorError) -> SimulatedTransaction {
        guard let found = store.transaction(anyID: id, bundleId: bundleId) else {
            throw SimulatorError.notFound(4_040_010, "Transaction id not found.")
        }
        return found
    }

    func transactionInfo(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        let id = try Self.transactionID(context)
        guard let stored = store.transaction(anyID: id, bundleId: bundleId), stored.payload.transactionId == id else {
            throw SimulatorError.notFound(4_040_010, "Transaction id not found.")
        }
        return try Self.json(TransactionInfoResponse(signedTransactionInfo: try signing.signAsOfNow(stored.payload)))
    }

    func history(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        let id = try Self.transactionID(context)
        let owner = try customer(of: id, bundleId: bundleId)
        if let broken = faults.brokenPurchaseError(owner.payload.originalTransactionId ?? id) { throw broken }
        if faults.hidesHistory(of: id) { throw SimulatorError.notFound(4_040_010, "Transaction id not found.") }
        let query = request.uri.queryParameters
        let filter = try HistoryFilter(query)
        var matching = store.transactions(customerID: owner.customerID, bundleId: bundleId).map(\.payload).filter(filter.matches)
        if filter.descending { matching.reverse() }
        let offset = try PageToken.offset(query.get("revision"), invalidCode: 4_000_005, message: "Invalid request revision.")
        let page = Array(matching.dropFirst(offset).prefix(Self.pageSize))
        let next = offset + page.count
        let response = HistoryResponse(
            revision: PageToken.make(next), hasMore: next < matching.count, bundleId: bundleId,
            appAppleId: store.appAppleIds[bundleId], environment: .sandbox,
            signedTransactions: try Self.signedAsAnswered(page, signing))
        return try Self.json(response)
    }

    /// A history page signed: each purchase's last transaction on the page as of now, the rest from
    /// the cache. Enrich narrows a page to one purchase, so whatever it keeps has a newest signedDate
    /// of when the page was answered, as with Apple (see ``SimulatorSigning/signedRenewalInfoAsOfNow(of:)``).
    static func signedAsAnswered(_ page: [JWSTransactionDecodedPayload], _ signing: SimulatorSigning) throws(SimulatorError) -> [String] {
        var lastOfPurchase: [String: Int] = [:]
        for (index, transaction) in page.enumerated() { lastOfPurchase[transaction.originalTransactionId ?? ""] = index }
        let fresh = Set(lastOfPurchase.values)
        return try page.indices.map { i throws(SimulatorError) in
            fresh.contains(i) ? try signing.signAsOfNow(page[i]) : try signing.sign(page[i])
        }
    }

    func statuses(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        let id = try Self.transactionID(context)
        let owner = try customer(of: id, bundleId: bundleId)
        var wanted: Set<Int> = []
        for raw in request.uri.queryParameters.getAll("status") {
            guard let value = Int(raw), (1...5).contains(value) else { throw SimulatorError.badRequest(4_000_031, "Invalid status.") }
            wanted.insert(value)
        }
        var groups: [String: [LastTransactionsItem]] = [:]
        for latest in signing.latestSubscriptionTransactions(customerID: owner.customerID, bundleId: bundleId) {
            let status = signing.status(of: latest)
            guard wanted.isEmpty || wanted.contains(status.rawValue) else { continue }
            let item = LastTransactionsItem(
                status: status, originalTransactionId: latest.originalTransactionId,
                signedTransactionInfo: try signing.sign(latest), signedRenewalInfo: try signing.signedRenewalInfoAsOfNow(of: latest))
            groups[latest.subscriptionGroupIdentifier ?? "", default: []].append(item)
        }
        let data = groups.keys.sorted().map { SubscriptionGroupIdentifierItem(subscriptionGroupIdentifier: $0, lastTransactions: groups[$0]) }
        return try Self.json(StatusResponse(environment: .sandbox, bundleId: bundleId, appAppleId: store.appAppleIds[bundleId], data: data))
    }
}

/// Opaque page tokens (Apple's `revision` and `paginationToken`): the offset of the next page.
enum PageToken {
    static func make(_ offset: Int) -> String { Base64.encodeURL(Array("sim-page:\(offset)".utf8)) }

    static func offset(_ token: String?, invalidCode: Int64, message: String) throws(SimulatorError) -> Int {
        guard let token else { return 0 }
        guard let bytes = Base64.decodeURL(token), let text = String(bytes: bytes, encoding: .utf8), text.hasPrefix("sim-page:"),
            let offset = Int(text.dropFirst("sim-page:".count)), offset >= 0
        else { throw SimulatorError.badRequest(invalidCode, message) }
        return offset
    }
}
