import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import PipelineMessages
import PipelineOperations
import PipelineRecords

/// What Apple's Look Up Order ID returned, verified, grouped for support.
public struct OrderLookupResult: Sendable, Hashable {
    public var orderID: String
    public var transactions: [JWSTransactionDecodedPayload]
    /// The customers the transactions name (their `appAccountToken`), in first-seen order.
    public var customers: [UUID] {
        var seen: [UUID] = []
        for token in transactions.compactMap(\.appAccountToken) where !seen.contains(token) { seen.append(token) }
        return seen
    }
}

/// `appstorectl lookup-order`: the transactions behind an order ID from a customer's receipt e-mail,
/// and optionally feeding them through the pipeline (verified topic, `source: reconcile`).
public struct OrderLookupJob: Sendable {
    public let client: AppStoreServerAPIClient

    public init(client: AppStoreServerAPIClient) {
        self.client = client
    }

    /// Looks the order up; an order ID Apple does not know is `OperationsError` `order_not_found`.
    public func lookUp(_ orderID: String, target: AppStoreServerAPIClient.Target) async throws -> OrderLookupResult {
        let lookup: OrderLookup
        do {
            lookup = try await client.lookUpOrderID(orderID, target: target)
        } catch {
            throw OperationsError.api(error)
        }
        guard lookup.isValid else {
            throw OperationsError(.orderNotFound, "Apple does not know order \(orderID) for \(target)")
        }
        return OrderLookupResult(orderID: orderID, transactions: lookup.transactions)
    }

    /// Publishes each transaction (fetched again for its JWS) to the verified topic; returns the keys.
    public func feed(
        _ result: OrderLookupResult, target: AppStoreServerAPIClient.Target, producer: KafkaProducer, verifiedTopic: String = Topics.verified
    ) async throws -> [String] {
        var keys: [String] = []
        for transaction in result.transactions {
            guard let id = transaction.transactionId else { continue }
            let fetched: VerifiedSignedTransaction
            do {
                fetched = try await client.signedTransactionInfo(transactionId: id, target: target)
            } catch {
                throw OperationsError.api(error)
            }
            if let key = try await VerifiedRecord.fetched(fetched, bundleId: target.bundleId).feed(to: producer, topic: verifiedTopic) {
                keys.append(key)
            }
        }
        return keys
    }
}
