/// The SQL of the store. Each batch statement takes one `jsonb` array (`$1`) of ``StoreRows`` and
/// unpacks it with `batch_rows` (migration 0003: the array's elements, estimated as a handful so the
/// planner looks each row up by its key), so a batch of any size is a fixed number of round trips.
enum StoreStatements {
    /// `r` is one element of the `$1` array.
    private static let rows = "FROM batch_rows($1::text::jsonb) AS r"

    /// Serialises concurrent writers of one purchase (a partition moving between consumers):
    /// transaction-scoped advisory locks on every key of the batch, taken in sorted order.
    static let lockKeys = """
        SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0)))
        FROM (SELECT r->>'e' || ':' || (r->>'k') AS k \(rows) ORDER BY 1) AS keys
        """

    static let loadApplied = """
        SELECT n.environment, n.event_key \(rows) JOIN notifications n ON n.environment = r->>'e' AND n.event_key = r->>'k'
        """

    static let loadPurchases = """
        SELECT s.state::text \(rows)
        JOIN subscriptions s ON s.environment = r->>'e' AND s.original_transaction_id = r->>'k'
        """

    static let loadEntitlements = """
        SELECT en.environment, en.customer_id, en.entitlement_key, en.source_id, en.source_kind, en.product_id,
               en.active, en.active_from, en.active_until, en.reason
        \(rows) JOIN entitlements en ON en.environment = r->>'e' AND en.source_id = r->>'k'
        """

    static let loadConsumables = """
        SELECT c.environment, c.transaction_id, c.customer_id, c.product_id, c.entitlement_keys, c.quantity,
               c.purchased_at, c.revoked_at, c.revocation_reason, c.state_as_of, c.state_event_key
        \(rows) JOIN consumable_grants c ON c.environment = r->>'e' AND c.transaction_id = r->>'k'
        """

    /// A customer's external user ID is written once: a later upload naming another user never
    /// replaces it (the first authenticated link stands; support changes it deliberately).
    static let upsertCustomers = """
        INSERT INTO customers (environment, customer_id, external_user_id)
        SELECT r->>'environment', (r->>'customerId')::uuid, r->>'externalUserId' \(rows)
        ON CONFLICT (environment, customer_id) DO UPDATE SET external_user_id = EXCLUDED.external_user_id
        WHERE customers.external_user_id IS NULL AND EXCLUDED.external_user_id IS NOT NULL
        """

    /// Locks the customers that get changes, in key order, and reads their next sequence numbers.
    static let lockSequences = """
        SELECT c.environment, c.customer_id, c.next_seq FROM customers c
        JOIN (SELECT DISTINCT r->>'e' AS e, (r->>'k')::uuid AS k \(rows)) AS wanted ON c.environment = wanted.e AND c.customer_id = wanted.k
        ORDER BY c.environment, c.customer_id FOR UPDATE OF c
        """

    static let updateSequences = """
        UPDATE customers c SET next_seq = (r->>'nextSeq')::bigint \(rows)
        WHERE c.environment = r->>'environment' AND c.customer_id = (r->>'customerId')::uuid
        """

    static let upsertTransactions = upsert(
        table: "transactions", from: "\(rows), LATERAL (SELECT r->'transaction' AS p) AS t",
        key: ["environment", "transaction_id"],
        columns: [
            ("environment", "r->>'environment'"), ("transaction_id", "p->>'transactionId'"),
            ("original_transaction_id", "p->>'originalTransactionId'"), ("web_order_line_item_id", "p->>'webOrderLineItemId'"),
            ("bundle_id", "p->>'bundleId'"), ("product_id", "p->>'productId'"),
            ("subscription_group_id", "p->>'subscriptionGroupIdentifier'"), ("product_type", "p->>'type'"),
            ("purchase_date", "ms_to_timestamptz(p->'purchaseDate')"),
            ("original_purchase_date", "ms_to_timestamptz(p->'originalPurchaseDate')"),
            ("expires_date", "ms_to_timestamptz(p->'expiresDate')"), ("quantity", "(p->>'quantity')::integer"),
            ("app_account_token", "(p->>'appAccountToken')::uuid"), ("in_app_ownership_type", "p->>'inAppOwnershipType'"),
            ("signed_date", "ms_to_timestamptz(p->'signedDate')"), ("revocation_date", "ms_to_timestamptz(p->'revocationDate')"),
            ("revocation_reason", "(p->>'revocationReason')::smallint"), ("revocation_type", "p->>'revocationType'"),
            ("revocation_percentage", "(p->>'revocationPercentage')::integer"), ("is_upgraded", "(p->>'isUpgraded')::boolean"),
            ("offer_type", "(p->>'offerType')::smallint"), ("offer_identifier", "p->>'offerIdentifier'"),
            ("offer_discount_type", "p->>'offerDiscountType'"), ("offer_period", "p->>'offerPeriod'"),
            ("storefront", "p->>'storefront'"), ("storefront_id", "p->>'storefrontId'"),
            ("transaction_reason", "p->>'transactionReason'"), ("currency", "p->>'currency'"),
            ("price_milliunits", "(p->>'price')::bigint"), ("app_transaction_id", "p->>'appTransactionId'"),
            ("billing_plan_type", "p->>'billingPlanType'"), ("payload", "p"), ("raw_jws", "r->>'rawJWS'"),
        ],
        updateWhere: "transactions.signed_date IS NULL OR EXCLUDED.signed_date > transactions.signed_date")

    static let upsertPurchases = upsert(
        table: "subscriptions", from: "\(rows), LATERAL (SELECT r->'state' AS s) AS x",
        key: ["environment", "original_transaction_id"],
        columns: [
            ("environment", "s->'key'->>'environment'"), ("original_transaction_id", "s->'key'->>'originalTransactionId'"),
            ("product_type", "s->>'productType'"), ("product_id", "s->>'productId'"),
            ("auto_renew_product_id", "s->>'autoRenewProductId'"), ("auto_renew_enabled", "(s->>'autoRenewEnabled')::boolean"),
            ("lifecycle", "s->>'lifecycle'"), ("apple_status", "(s->>'appleStatus')::smallint"),
            ("purchase_date", "ms_to_timestamptz(s->'purchaseDate')"), ("expires_at", "ms_to_timestamptz(s->'expiresAt')"),
            ("grace_period_expires_at", "ms_to_timestamptz(s->'gracePeriodExpiresAt')"),
            ("is_in_billing_retry", "(s->>'isInBillingRetry')::boolean"),
            ("price_increase_status", "(s->>'priceIncreaseStatus')::smallint"),
            ("expiration_intent", "(s->>'expirationIntent')::smallint"), ("revoked_at", "ms_to_timestamptz(s->'revokedAt')"),
            ("revocation_reason", "(s->>'revocationReason')::smallint"), ("latest_transaction_id", "s->>'latestTransactionId'"),
            ("subscription_group_id", "s->>'subscriptionGroupId'"), ("owner_customer_id", "(r->>'owner')::uuid"),
            ("state_as_of", "ms_to_timestamptz(s->'version'->'asOf')"), ("state_event_key", "s->'version'->>'eventKey'"),
            ("last_signed_date", "ms_to_timestamptz(s->'lastSignedDate')"), ("state", "s"),
        ])

    static let upsertClaims = upsert(
        table: "ownership_claims", from: rows, key: ["environment", "original_transaction_id", "customer_id"],
        columns: [
            ("environment", "r->>'environment'"), ("original_transaction_id", "r->>'originalTransactionId'"),
            ("customer_id", "(r->>'customerId')::uuid"), ("first_claimed_at", "ms_to_timestamptz(r->'firstClaimedAt')"),
            ("verified", "(r->>'verified')::boolean"), ("status", "r->>'status'"), ("cause_event_key", "r->>'causeEventKey'"),
        ])

    static let deleteEntitlements = """
        DELETE FROM entitlements en USING batch_rows($1::text::jsonb) AS r
        WHERE en.environment = r->>'environment' AND en.customer_id = (r->>'customerId')::uuid
          AND en.entitlement_key = r->>'entitlementKey' AND en.source_id = r->>'sourceId'
        """

    static let upsertEntitlements = upsert(
        table: "entitlements", from: rows, key: ["environment", "customer_id", "entitlement_key", "source_id"],
        columns: [
            ("environment", "r->>'environment'"), ("customer_id", "(r->>'customerId')::uuid"),
            ("entitlement_key", "r->>'entitlementKey'"), ("source_id", "r->>'sourceId'"), ("source_kind", "r->>'sourceKind'"),
            ("product_id", "r->>'productId'"), ("active", "(r->>'active')::boolean"),
            ("active_from", "ms_to_timestamptz(r->'activeFrom')"), ("active_until", "ms_to_timestamptz(r->'activeUntil')"),
            ("reason", "r->>'reason'"),
        ])

    static let upsertConsumables = upsert(
        table: "consumable_grants", from: rows, key: ["environment", "transaction_id"],
        columns: [
            ("environment", "r->>'environment'"), ("transaction_id", "r->>'transactionId'"),
            ("customer_id", "(r->>'customerId')::uuid"), ("product_id", "r->>'productId'"),
            ("entitlement_keys", "ARRAY(SELECT jsonb_array_elements_text(r->'entitlementKeys'))"),
            ("quantity", "(r->>'quantity')::integer"), ("purchased_at", "ms_to_timestamptz(r->'purchasedAt')"),
            ("revoked_at", "ms_to_timestamptz(r->'revokedAt')"), ("revocation_reason", "(r->>'revocationReason')::smallint"),
            ("state_as_of", "ms_to_timestamptz(r->'asOf')"), ("state_event_key", "r->>'eventKey'"),
        ])

    static let insertNotifications = """
        INSERT INTO notifications (environment, event_key, notification_uuid, kind, source, notification_type, subtype,
                                   original_transaction_id, transaction_id, signed_date, received_at, ingested_at, outcome, note)
        SELECT r->>'environment', r->>'eventKey', r->>'notificationUUID', r->>'kind', r->>'source', r->>'type', r->>'subtype',
               r->>'originalTransactionId', r->>'transactionId', ms_to_timestamptz(r->'signedDate'),
               ms_to_timestamptz(r->'receivedAt'), ms_to_timestamptz(r->'ingestedAt'), r->>'outcome', r->>'note'
        \(rows) ON CONFLICT DO NOTHING
        """

    static let insertConsumptionRequests = """
        INSERT INTO consumption_requests (environment, notification_uuid, bundle_id, transaction_id, original_transaction_id,
            reason, signed_date, deadline)
        SELECT r->>'environment', r->>'notificationUUID', r->>'bundleId', r->>'transactionId', r->>'originalTransactionId', r->>'reason',
               ms_to_timestamptz(r->'signedDate'), ms_to_timestamptz(r->'deadline')
        \(rows) ON CONFLICT DO NOTHING
        """

    static let insertChanges = """
        INSERT INTO entitlement_changes (environment, customer_id, seq, entitlement_key, source_id, product_id, change, active,
            active_until, reason, quantity, cause_event_key, cause_type, cause_subtype, cause_lookup, cause_as_of, cause_signed_date)
        SELECT r->>'environment', (r->>'customerId')::uuid, (r->>'seq')::bigint, r->>'entitlementKey', r->>'sourceId',
               r->>'productId', r->>'change', (r->>'active')::boolean, ms_to_timestamptz(r->'activeUntil'), r->>'reason',
               (r->>'quantity')::integer, r->>'causeEventKey', r->>'causeType', r->>'causeSubtype', r->>'causeLookup',
               ms_to_timestamptz(r->'causeAsOf'), ms_to_timestamptz(r->'causeSignedDate')
        \(rows)
        """

    static let insertOutbox = """
        INSERT INTO outbox (environment, customer_id, seq, body)
        SELECT r->>'environment', (r->>'customerId')::uuid, (r->>'seq')::bigint, r->'body' \(rows)
        """

    /// Marks published outbox rows (``StoreRows/SeqAllocation`` rows: customer and `seq`).
    static let markPublished = """
        UPDATE outbox o SET published_at = now() \(rows)
        WHERE o.environment = r->>'environment' AND o.customer_id = (r->>'customerId')::uuid AND o.seq = (r->>'nextSeq')::bigint
        """

    static let insertProducts = """
        INSERT INTO product_entitlements (product_id, entitlement_key, duration_days)
        SELECT r->>'productId', r->>'entitlementKey', (r->>'durationDays')::integer \(rows)
        """

    /// `INSERT … SELECT … ON CONFLICT (key) DO UPDATE SET (every other column) = ROW(EXCLUDED.…)`.
    private static func upsert(table: String, from: String, key: [String], columns: [(String, String)], updateWhere: String? = nil) -> String {
        let names = columns.map(\.0)
        let others = names.filter { !key.contains($0) }
        var sql = "INSERT INTO \(table) (\(names.joined(separator: ", "))) SELECT \(columns.map(\.1).joined(separator: ", ")) \(from) "
        sql += "ON CONFLICT (\(key.joined(separator: ", "))) DO UPDATE SET (\(others.joined(separator: ", "))) = "
        sql += "ROW(\(others.map { "EXCLUDED.\($0)" }.joined(separator: ", ")))"
        if let updateWhere { sql += " WHERE \(updateWhere)" }
        return sql
    }
}
