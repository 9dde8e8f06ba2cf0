import AppStore
import AppStoreServerAPI
import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// Lookups beyond one purchase: Get Refund History and Look Up Order ID.
extension SimulatorAPIRoutes {
    func refunds(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        let id = try Self.transactionID(context)
        let owner = try customer(of: id, bundleId: bundleId)
        let refunded = store.transactions(customerID: owner.customerID, bundleId: bundleId).map(\.payload)
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

    func orderLookup(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        guard let orderID = context.parameters.get("orderId"), !orderID.isEmpty, orderID.allSatisfy({ $0.isLetter || $0.isNumber }) else {
            return try Self.json(OrderLookupResponse(status: 1, signedTransactions: []))
        }
        let ids = store.state.withLock { $0.orders[orderID] } ?? []
        let transactions = ids.compactMap { store.transaction(anyID: $0, bundleId: bundleId)?.payload }.filter {
            ids.contains($0.transactionId ?? "")
        }
        guard !transactions.isEmpty else { return try Self.json(OrderLookupResponse(status: 1, signedTransactions: [])) }
        return try Self.json(
            OrderLookupResponse(status: 0, signedTransactions: try transactions.map { t throws(SimulatorError) in try signing.signAsOfNow(t) }))
    }
}
