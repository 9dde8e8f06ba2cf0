import Foundation
import Logging
import PipelineOperations
import PostgresNIO

/// How support names a customer: the `appAccountToken` itself, or something from a receipt, a
/// support ticket or the product's own user database.
public enum CustomerIdentifier: Sendable, Hashable, CustomStringConvertible {
    case appAccountToken(UUID)
    case transactionId(String)
    case originalTransactionId(String)
    case externalUserId(String)

    public var description: String {
        switch self {
        case .appAccountToken(let id): "appAccountToken \(id.uuidString.lowercased())"
        case .transactionId(let id): "transactionId \(id)"
        case .originalTransactionId(let id): "originalTransactionId \(id)"
        case .externalUserId(let id): "external user ID \(id)"
        }
    }
}

/// Finds the customers (appAccountTokens) an identifier names in grant's tables. A purchase names
/// its owner; when nobody owns it (a consumable, a purchase without a token) the customer its
/// grants or transactions name.
public enum CustomerLookup {
    public static func customers(
        _ identifier: CustomerIdentifier, environment: String?, database: PostgresClient, logger: Logger
    ) async throws -> [UUID] {
        var found: [String] = []
        do {
            switch identifier {
            case .appAccountToken(let id):
                return [id]
            case .externalUserId(let external):
                let rows = try await database.query(
                    """
                    SELECT DISTINCT customer_id::text FROM customers
                    WHERE external_user_id = \(external) AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                    ORDER BY 1
                    """, logger: logger)
                for try await id in rows.decode(String.self) { found.append(id) }
            case .transactionId(let transaction):
                let rows = try await database.query(
                    """
                    SELECT original_transaction_id FROM transactions
                    WHERE transaction_id = \(transaction) AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                    UNION SELECT transaction_id FROM consumable_grants
                    WHERE transaction_id = \(transaction) AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                    """, logger: logger)
                var originals: [String] = []
                for try await original in rows.decode(String.self) { originals.append(original) }
                for original in originals {
                    for id in try await owners(of: original, environment: environment, database: database, logger: logger)
                    where !found.contains(id) { found.append(id) }
                }
                if found.isEmpty {
                    let tokens = try await database.query(
                        """
                        SELECT DISTINCT app_account_token::text FROM transactions
                        WHERE transaction_id = \(transaction) AND app_account_token IS NOT NULL
                          AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                        """, logger: logger)
                    for try await id in tokens.decode(String.self) { found.append(id) }
                }
            case .originalTransactionId(let original):
                found = try await owners(of: original, environment: environment, database: database, logger: logger)
            }
        } catch {
            throw OperationsError(.storeFailed, "looking up \(identifier) failed: \(String(reflecting: error).prefix(300))")
        }
        return found.compactMap(UUID.init(uuidString:))
    }

    /// The owner of a purchase; else the customer of its consumable grant; else the tokens its
    /// transactions carry.
    static func owners(of original: String, environment: String?, database: PostgresClient, logger: Logger) async throws -> [String] {
        let rows = try await database.query(
            """
            SELECT rank, id FROM (
                SELECT 1 AS rank, owner_customer_id::text AS id FROM subscriptions
                WHERE original_transaction_id = \(original) AND owner_customer_id IS NOT NULL
                  AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                UNION SELECT 2, customer_id::text FROM ownership_claims
                WHERE original_transaction_id = \(original) AND status = 'owner'
                  AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                UNION SELECT 3, customer_id::text FROM consumable_grants
                WHERE transaction_id = \(original) AND customer_id IS NOT NULL
                  AND (\(environment)::text IS NULL OR environment = \(environment)::text)
                UNION SELECT 4, app_account_token::text FROM transactions
                WHERE original_transaction_id = \(original) AND app_account_token IS NOT NULL
                  AND (\(environment)::text IS NULL OR environment = \(environment)::text)
            ) candidates ORDER BY rank, id
            """, logger: logger)
        var ranked: [(Int, String)] = []
        for try await (rank, id) in rows.decode((Int32, String).self) { ranked.append((Int(rank), id)) }
        guard let best = ranked.first?.0 else { return [] }
        var ids: [String] = []
        for (rank, id) in ranked where rank == best && !ids.contains(id) { ids.append(id) }
        return ids
    }
}
