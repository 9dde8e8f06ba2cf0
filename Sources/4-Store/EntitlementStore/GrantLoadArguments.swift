import AppStore
import Foundation
import GrantDecision
import PostgresNIO

/// `grant_load`'s typed arguments (schemas/migrations/functions/grant_load.sql): the purchases to
/// lock, and per event its key, purchase, app transaction and the transactions it carries (as
/// parallel arrays: the event's environment and position, 1-based, and a transaction ID).
struct GrantLoadArguments {
    var purchaseEnvs: [String] = [], purchaseIds: [String] = []
    var eventEnvs: [String] = [], eventKeys: [String] = [], eventPurchases: [String?] = [], eventAppTransactions: [String?] = []
    var carriedEnvs: [String] = [], carriedEvents: [Int32] = [], carriedTransactions: [String] = []

    /// The arguments for `events`: their purchases in key order, and each event.
    init(_ events: [GrantEvent]) {
        for key in Set(events.compactMap(\.purchaseKey)).sorted() {
            purchaseEnvs.append(key.environment)
            purchaseIds.append(key.purchaseId)
        }
        for (index, event) in events.enumerated() {
            add(
                environment: event.environment, eventKey: event.eventKey, purchase: event.purchaseKey?.purchaseId,
                appTransaction: event.transaction?.appTransactionId ?? event.appTransactionId)
            for transaction in event.transactions where transaction.originalTransactionId != nil {
                guard let id = transaction.transactionId else { continue }
                carriedEnvs.append(event.environment)
                carriedEvents.append(Int32(index + 1))
                carriedTransactions.append(id)
            }
        }
    }

    /// Arguments that lock and read `purchases` alone, each under a made-up event key no
    /// notification has (``EntitlementStore``'s consent suspension).
    init(purchases: [PurchaseKey], eventKeyPrefix: String) {
        for key in purchases {
            purchaseEnvs.append(key.environment)
            purchaseIds.append(key.purchaseId)
            add(
                environment: key.environment, eventKey: eventKeyPrefix + key.purchaseId, purchase: key.purchaseId,
                appTransaction: nil)
        }
    }

    private mutating func add(environment: String, eventKey: String, purchase: String?, appTransaction: String?) {
        eventEnvs.append(environment)
        eventKeys.append(eventKey)
        eventPurchases.append(purchase)
        eventAppTransactions.append(appTransaction)
    }
}

/// `grant_load` as a named prepared statement, prepared once per connection.
struct GrantLoadStatement: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static let name = "appstore.GrantLoadArguments"
    static let sql = """
        SELECT * FROM grant_load($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::integer[],
            $9::text[])
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .textArray, .textArray, .textArray, .textArray, .textArray, .textArray, .textArray, .int4Array, .textArray,
    ]

    let arguments: GrantLoadArguments

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 9)
        bindings.append(arguments.purchaseEnvs)
        bindings.append(arguments.purchaseIds)
        bindings.append(arguments.eventEnvs)
        bindings.append(arguments.eventKeys)
        bindings.append(NullableColumn(arguments.eventPurchases))
        bindings.append(NullableColumn(arguments.eventAppTransactions))
        bindings.append(arguments.carriedEnvs)
        bindings.append(arguments.carriedEvents)
        bindings.append(arguments.carriedTransactions)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}
