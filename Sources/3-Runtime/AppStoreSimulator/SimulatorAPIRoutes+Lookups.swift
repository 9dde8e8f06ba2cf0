import AppStore
import AppStoreServerAPI
import Foundation
import Hummingbird
import JSONCoding
import NIOCore
import Synchronization

/// Lookups beyond one purchase: Get Refund History and Look Up Order ID.
extension SimulatorAPIRoutes {
    /// Get Refund History v2: the customer's refunded purchases by `revocationDate` (then transaction
    /// ID), 20 a page. Apple says the final page's `revision` can be kept to ask later for what is
    /// new only; here a revision is the position after the last refund returned, so a later call
    /// with it returns the refunds made since (and nothing when there are none).
    func refunds(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        let id = try Self.transactionID(context)
        let owner = try customer(of: id, bundleId: bundleId)
        let refunded = store.transactions(customerID: owner.customerID, bundleId: bundleId).map(\.payload)
            .filter { $0.revocationDate != nil }
            .map { (position: RefundCursor(at: $0), transaction: $0) }
            .sorted { $0.position < $1.position }
        let after = try RefundCursor(revision: request.uri.queryParameters.get("revision"))
        let remaining = refunded.filter { refund in after.map { refund.position > $0 } ?? true }
        let page = Array(remaining.prefix(Self.pageSize))
        let revision = page.last?.position ?? after ?? RefundCursor(milliseconds: 0, transactionId: "")
        faults.countRefundsReturned(page.count)
        return try Self.json(
            RefundHistoryResponse(
                signedTransactions: try page.map { t throws(SimulatorError) in try signing.sign(t.transaction) }, revision: revision.token,
                hasMore: remaining.count > page.count))
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

/// A position in a customer's refunds (Get Refund History's `revision`): the revocation date in
/// milliseconds and the transaction ID of the last refund returned.
struct RefundCursor: Comparable, Sendable {
    var milliseconds: Int64
    var transactionId: String

    init(milliseconds: Int64, transactionId: String) {
        self.milliseconds = milliseconds
        self.transactionId = transactionId
    }

    init(at transaction: JWSTransactionDecodedPayload) {
        self.init(
            milliseconds: AppStoreJSON.milliseconds(since1970: transaction.revocationDate ?? Date(timeIntervalSince1970: 0)),
            transactionId: transaction.transactionId ?? "")
    }

    /// The cursor a revision names, `nil` for none. - Throws: Apple's 4000005 for a revision it never gave.
    init?(revision: String?) throws(SimulatorError) {
        guard let revision else { return nil }
        guard let bytes = Base64.decodeURL(revision), let text = String(bytes: bytes, encoding: .utf8), text.hasPrefix("sim-refunds:") else {
            throw SimulatorError.badRequest(4_000_005, "Invalid request revision.")
        }
        let parts = text.dropFirst("sim-refunds:".count).split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let milliseconds = Int64(parts[0]) else { throw SimulatorError.badRequest(4_000_005, "Invalid request revision.") }
        self.init(milliseconds: milliseconds, transactionId: String(parts[1]))
    }

    var token: String { Base64.encodeURL(Array("sim-refunds:\(milliseconds):\(transactionId)".utf8)) }

    static func < (a: RefundCursor, b: RefundCursor) -> Bool {
        (a.milliseconds, a.transactionId.count, a.transactionId) < (b.milliseconds, b.transactionId.count, b.transactionId)
    }
}
