import AppStore
import AppStoreServerAPI
import Foundation
import KafkaClient
import Logging
import PipelineOperations
import PipelineRecords
import PostgresNIO

/// A customer the refund sweep asks Apple about, with what the last sweep kept.
public struct RefundSweepCustomer: Sendable, Hashable, OperatorJSONObject {
    public var environment: String
    public var bundleId: String
    public var customerId: String
    /// The transaction Apple is asked with (any purchase of the customer names them at Apple).
    public var transactionId: String
    /// Apple's `revision` from the last sweep; `nil`: never swept, Apple lists every refund.
    public var revision: String?
}

/// What the sweep did for one customer.
public struct RefundSweepItem: Sendable, Hashable, OperatorJSONObject {
    public var customer: RefundSweepCustomer
    /// Pages Apple answered.
    public var pages = 0
    /// Refunded transactions Apple listed (only those since `revision` when there was one).
    public var listed = 0
    /// The refunded transactions grant did not know as refunded, fed to the pipeline.
    public var fed: [String] = []
    /// Why the customer was not swept (nothing is kept then: the next sweep asks again).
    public var failure: String?
}

/// `appstorectl refunds`: the safety net for `REFUND` notifications Apple never delivered (beyond
/// its retries, or while the webhook was broken). For every customer with purchases it pages Get
/// Refund History v2 from the `revision` the previous sweep kept (`refund_sweeps`), so each run
/// asks Apple only for refunds made since; a refunded transaction grant does not already hold as
/// refunded (same `revocationDate` and share) is fed to the verified topic (`source:
/// refund-history`), and enrich and grant apply it like Apple's notification. The revision is kept
/// only after everything listed was fed, so a failure is asked about again next time.
public struct RefundSweep: Sendable {
    public let database: PostgresClient
    public let logger: Logger

    public init(database: PostgresClient, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Customers owning a purchase (or a delivered consumable) of `bundleId` (every app when nil),
    /// bought on or after `since` when given, each with its latest purchase and the kept revision.
    public func customers(bundleId: String? = nil, since: Date? = nil) async throws -> [RefundSweepCustomer] {
        let query: PostgresQuery = """
            WITH purchases AS (
                SELECT c.environment, t.bundle_id, c.customer_id, t.transaction_id, t.purchase_date
                FROM ownership_claims c
                JOIN transactions t ON t.environment = c.environment AND t.original_transaction_id = c.original_transaction_id
                WHERE c.status = 'owner'
                UNION ALL
                SELECT g.environment, t.bundle_id, g.customer_id, g.transaction_id, t.purchase_date
                FROM consumable_grants g
                JOIN transactions t ON t.environment = g.environment AND t.transaction_id = g.transaction_id
                WHERE g.customer_id IS NOT NULL
            )
            SELECT DISTINCT ON (p.environment, p.bundle_id, p.customer_id)
                p.environment, p.bundle_id, p.customer_id::text, coalesce(s.transaction_id, p.transaction_id), s.revision
            FROM purchases p
            LEFT JOIN refund_sweeps s ON s.environment = p.environment AND s.bundle_id = p.bundle_id AND s.customer_id = p.customer_id
            WHERE p.bundle_id IS NOT NULL AND p.environment IN ('Sandbox', 'Production')
              AND (\(bundleId)::text IS NULL OR p.bundle_id = \(bundleId)::text)
              AND (\(since)::timestamptz IS NULL OR p.purchase_date >= \(since)::timestamptz)
            ORDER BY p.environment, p.bundle_id, p.customer_id, p.purchase_date DESC NULLS LAST, p.transaction_id
            """
        var result: [RefundSweepCustomer] = []
        do {
            let rows = try await database.query(query, logger: logger)
            for try await (environment, bundle, customer, transaction, revision) in rows.decode((String, String, String, String, String?).self) {
                result.append(
                    RefundSweepCustomer(
                        environment: environment, bundleId: bundle, customerId: customer, transactionId: transaction, revision: revision))
            }
        } catch {
            throw OperationsError(.storeFailed, "reading the customers to sweep failed: \(String(reflecting: error).prefix(300))")
        }
        return result
    }

    /// Sweeps each customer in turn (nothing is fed or kept when `producer` is nil: a dry run that
    /// still asks Apple). One customer's failure is reported and the rest continue.
    public func sweep(
        _ customers: [RefundSweepCustomer], client: AppStoreServerAPIClient, producer: KafkaProducer?,
        verifiedTopic: String = Topics.verified
    ) async -> [RefundSweepItem] {
        var items: [RefundSweepItem] = []
        for customer in customers {
            var item = RefundSweepItem(customer: customer)
            do {
                try await sweep(&item, client: client, producer: producer, verifiedTopic: verifiedTopic)
            } catch let error as OperationsError {
                item.failure = error.description
            } catch {
                item.failure = OperationsError(.storeFailed, "\(error)").description
            }
            items.append(item)
        }
        return items
    }

    private func sweep(
        _ item: inout RefundSweepItem, client: AppStoreServerAPIClient, producer: KafkaProducer?, verifiedTopic: String
    ) async throws {
        let customer = item.customer
        let target = AppStoreServerAPIClient.Target(bundleId: customer.bundleId, environment: AppStoreEnvironment(rawValue: customer.environment))
        var revision = customer.revision
        var listed: [VerifiedSignedTransaction] = []
        while true {
            let page: RefundHistoryPage
            do {
                page = try await client.refundHistoryPage(transactionId: customer.transactionId, revision: revision, target: target)
            } catch {
                throw OperationsError.api(error)
            }
            item.pages += 1
            listed += page.signedTransactions
            revision = page.revision ?? revision
            if !page.hasMore { break }
        }
        item.listed = listed.count
        guard let producer else { return }
        let known = try await knownRefunds(listed.map(\.transaction), environment: customer.environment)
        for refund in listed {
            let tx = refund.transaction
            guard let id = tx.transactionId, known[id] != RefundFacts(tx) else { continue }
            try await VerifiedRecord.fetched(refund, bundleId: customer.bundleId, source: PipelineHeader.Source.refundHistory)
                .feed(to: producer, topic: verifiedTopic)
            item.fed.append(id)
        }
        try await keep(customer, revision: revision, listed: listed.count)
    }

    /// A refund as grant stores it: when, and what share.
    struct RefundFacts: Hashable {
        var revokedAtMilliseconds: Int64?
        var percentage: Int32?

        init(_ tx: JWSTransactionDecodedPayload) {
            self.init(revokedAt: tx.revocationDate, percentage: tx.revocationPercentage)
        }

        init(revokedAt: Date?, percentage: Int32?) {
            revokedAtMilliseconds = revokedAt.map { AppStoreJSON.milliseconds(since1970: $0) }
            self.percentage = percentage
        }
    }

    /// The refund facts grant holds for these transactions.
    private func knownRefunds(_ transactions: [JWSTransactionDecodedPayload], environment: String) async throws -> [String: RefundFacts] {
        let ids = transactions.compactMap(\.transactionId)
        guard !ids.isEmpty else { return [:] }
        var known: [String: RefundFacts] = [:]
        do {
            let rows = try await database.query(
                """
                SELECT transaction_id, revocation_date, revocation_percentage FROM transactions
                WHERE environment = \(environment) AND transaction_id = ANY(\(ids))
                """, logger: logger)
            for try await (id, revoked, percentage) in rows.decode((String, Date?, Int32?).self) {
                known[id] = RefundFacts(revokedAt: revoked, percentage: percentage)
            }
        } catch {
            throw OperationsError(.storeFailed, "reading grant's transactions failed: \(String(reflecting: error).prefix(300))")
        }
        return known
    }

    /// Keeps Apple's revision for the customer's next sweep.
    private func keep(_ customer: RefundSweepCustomer, revision: String?, listed: Int) async throws {
        guard let revision else { return }
        do {
            try await database.query(
                """
                INSERT INTO refund_sweeps (environment, bundle_id, customer_id, transaction_id, revision, refunds_seen, swept_at)
                VALUES (\(customer.environment), \(customer.bundleId), \(customer.customerId)::uuid, \(customer.transactionId), \(revision),
                    \(listed), now())
                ON CONFLICT (environment, bundle_id, customer_id) DO UPDATE
                SET revision = excluded.revision, refunds_seen = refund_sweeps.refunds_seen + excluded.refunds_seen, swept_at = now()
                """, logger: logger)
        } catch {
            throw OperationsError(.storeFailed, "keeping the refund revision failed: \(String(reflecting: error).prefix(300))")
        }
    }
}
