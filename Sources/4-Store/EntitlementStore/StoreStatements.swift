/// The SQL of the store. A batch is applied by two server-side functions, each defined in its file
/// under schemas/migrations/functions, both taking typed arrays: `grant_load`
/// (``GrantLoadArguments``) locks the batch's purchases and returns everything the decisions read;
/// `grant_write` (``GrantWriteColumns``) writes the rows they changed. A batch of any size is four round trips:
/// BEGIN, load, write, COMMIT. Their statements are planned once per connection. The rare
/// statements below take their rows as one `jsonb` array, unpacked by `batch_rows`.
enum StoreStatements {
    /// `r` is one element of the `$1` array.
    private static let rows = "FROM batch_rows($1::text::jsonb) AS r"

    /// Deletes published outbox rows (``StoreRows/PublishedChange`` rows: customer and `seq`): the
    /// outbox keeps only what waits (migration 0010); the history is `entitlement_changes`.
    static let deletePublished = """
        DELETE FROM outbox o USING batch_rows($1::text::jsonb) AS r
        WHERE o.environment = r->>'environment' AND o.customer_id = (r->>'customerId')::uuid AND o.seq = (r->>'seq')::bigint
        """

    static let insertProducts = """
        INSERT INTO product_entitlements (product_id, entitlement_key, duration_days)
        SELECT r->>'productId', r->>'entitlementKey', (r->>'durationDays')::integer \(rows)
        """

    /// A mass extension's reports (``StoreRows/MassExtensionReport``, migration 0017), in the
    /// batch's transaction, only for a batch that has any. `SUMMARY` completes its request, found by
    /// its request identifier, once. `FAILURE` names no request: it is recorded against the newest
    /// request of its environment, bundle and product that Apple did not refuse and that was made
    /// before Apple signed the failure (a minute's leeway for clocks): Apple runs a product's mass
    /// extensions one after another, and the pipeline may bring a failure after its summary, so an
    /// already completed request still takes it. With no such request its `request_identifier` stays
    /// empty. A report seen before (its notification UUID) changes nothing.
    static let recordMassExtensions = """
        WITH reports (j) AS (SELECT r \(rows)),
        failures AS (
            INSERT INTO mass_renewal_extension_failures
                (environment, notification_uuid, request_identifier, bundle_id, product_id, original_transaction_id, reported_at)
            SELECT f.j->>'environment', f.j->>'notificationUUID',
                (SELECT m.request_identifier FROM mass_renewal_extensions m
                 WHERE m.environment = f.j->>'environment' AND m.bundle_id = f.j->>'bundleId' AND m.product_id = f.j->>'productId'
                   AND m.apple_outcome <> 'refused' AND m.requested_at <= ms_to_timestamptz(f.j->'reportedAt') + interval '1 minute'
                 ORDER BY m.requested_at DESC LIMIT 1),
                f.j->>'bundleId', f.j->>'productId', f.j->>'originalTransactionId', ms_to_timestamptz(f.j->'reportedAt')
            FROM reports AS f WHERE f.j->>'report' = 'failure'
            ON CONFLICT DO NOTHING
            RETURNING 1
        )
        UPDATE mass_renewal_extensions m
        SET succeeded_count = (s.j->>'succeededCount')::bigint, failed_count = (s.j->>'failedCount')::bigint,
            complete_date = ms_to_timestamptz(s.j->'reportedAt'), summary_notification_uuid = s.j->>'notificationUUID'
        FROM reports AS s
        WHERE s.j->>'report' = 'summary' AND m.environment = s.j->>'environment' AND m.request_identifier = s.j->>'requestIdentifier'
          AND m.summary_notification_uuid IS NULL
        """

    /// The batch's `RESCIND_CONSENT`s (``StoreRows/ConsentRescind``, migration 0018), only for a batch
    /// that has any: a new one is inserted (its customer null while none is known); a waiting one
    /// gets the customer this batch found, once.
    static let recordConsentRescinds = """
        INSERT INTO consent_rescinds
            (environment, app_transaction_id, event_key, notification_uuid, subtype, lookup, as_of, signed_date, customer_id, attributed_at)
        SELECT r->>'environment', r->>'appTransactionId', r->>'eventKey', r->>'notificationUUID', r->>'subtype', r->>'lookup',
            ms_to_timestamptz(r->'asOf'), ms_to_timestamptz(r->'signedDate'), (r->>'customerId')::uuid,
            CASE WHEN r->>'customerId' IS NULL THEN NULL ELSE now() END
        \(rows)
        ON CONFLICT (environment, app_transaction_id, event_key) DO UPDATE
        SET customer_id = EXCLUDED.customer_id, attributed_at = EXCLUDED.attributed_at
        WHERE consent_rescinds.customer_id IS NULL
        """

    /// The batch's new `EXTERNAL_PURCHASE_TOKEN`s (``StoreRows/ExternalPurchaseTokenRow``, migration
    /// 0019), each with its change event, waiting for the publisher. The batch holds only events not
    /// applied before, so a replay adds nothing; the conflict clause covers a concurrent copy.
    static let recordExternalPurchaseTokens = """
        INSERT INTO external_purchase_tokens (environment, event_key, external_purchase_id, subtype, body)
        SELECT r->>'environment', r->>'eventKey', r->>'externalPurchaseId', r->>'subtype', r->'body' \(rows)
        ON CONFLICT (environment, event_key) DO NOTHING
        """

    /// Marks token events the broker acknowledged (``StoreRows/PublishedToken``): the row stays as
    /// the record of what Apple told.
    static let markExternalPurchaseTokensPublished = """
        UPDATE external_purchase_tokens t SET published_at = now() FROM batch_rows($1::text::jsonb) AS r
        WHERE t.environment = r->>'environment' AND t.event_key = r->>'eventKey' AND t.published_at IS NULL
        """
}
