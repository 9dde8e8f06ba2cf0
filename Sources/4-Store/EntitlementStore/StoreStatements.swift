/// The SQL of the store. A batch is applied by two server-side functions, each defined in its file
/// under schemas/migrations/functions, both taking typed arrays: `grant_load`
/// (``GrantLoadArguments``) locks the batch's purchases and returns everything the decisions read;
/// `grant_write` (``GrantWriteColumns``) writes the rows they changed. A batch of any size is four round trips:
/// BEGIN, load, write, COMMIT. Their statements are planned once per connection. The rarer
/// statements below take their rows as typed arrays too (``RowsStatement``), one per column, read
/// as the table `r`.
enum StoreStatements {
    /// Deletes published outbox rows (customer and `seq`): the outbox keeps only what waits
    /// (migration 0010); the history is `entitlement_changes`.
    enum DeletePublished: RowsStatement {
        static let columns: [RowColumn<StoreRows.PublishedChange>] = [
            .init("environment", "text", \.environment), .init("customer_id", "uuid", \.customerId), .init("seq", "bigint", \.seq),
        ]
        static func sql(rows: String) -> String {
            """
            DELETE FROM outbox o USING \(rows)
            WHERE o.environment = r.environment AND o.customer_id = r.customer_id AND o.seq = r.seq
            """
        }
    }

    /// The product → entitlement mapping (grant's start-up sync), after the old rows are deleted.
    enum InsertProducts: RowsStatement {
        static let columns: [RowColumn<StoreRows.ProductEntitlement>] = [
            .init("product_id", "text", \.productId), .init("entitlement_key", "text", \.entitlementKey),
            .init("duration_days", "integer", \.durationDays),
        ]
        static func sql(rows: String) -> String {
            "INSERT INTO product_entitlements (product_id, entitlement_key, duration_days) SELECT * FROM \(rows)"
        }
    }

    /// A mass extension's reports (``StoreRows/MassExtensionReport``, migration 0017), in the
    /// batch's transaction, only for a batch that has any. `SUMMARY` completes its request, found by
    /// its request identifier, once. `FAILURE` names no request: it is recorded against the newest
    /// request of its environment, bundle and product that Apple did not refuse and that was made
    /// before Apple signed the failure (a minute's leeway for clocks): Apple runs a product's mass
    /// extensions one after another, and the pipeline may bring a failure after its summary, so an
    /// already completed request still takes it. With no such request its `request_identifier` stays
    /// empty. A report seen before (its notification UUID) changes nothing.
    enum RecordMassExtensions: RowsStatement {
        static let columns: [RowColumn<StoreRows.MassExtensionReport>] = [
            .init("environment", "text", \.environment), .init("notification_uuid", "text", \.notificationUUID),
            .init("report", "text", \.report), .init("bundle_id", "text", \.bundleId), .init("product_id", "text", \.productId),
            .init("request_identifier", "text", \.requestIdentifier), .init("succeeded_count", "bigint", \.succeededCount),
            .init("failed_count", "bigint", \.failedCount), .init("original_transaction_id", "text", \.originalTransactionId),
            .init("reported_at", moments: \.reportedAt),
        ]
        static func sql(rows: String) -> String {
            """
            WITH reports AS (SELECT * FROM \(rows)),
            failures AS (
                INSERT INTO mass_renewal_extension_failures
                    (environment, notification_uuid, request_identifier, bundle_id, product_id, original_transaction_id, reported_at)
                SELECT f.environment, f.notification_uuid,
                    (SELECT m.request_identifier FROM mass_renewal_extensions m
                     WHERE m.environment = f.environment AND m.bundle_id = f.bundle_id AND m.product_id = f.product_id
                       AND m.apple_outcome <> 'refused' AND m.requested_at <= f.reported_at + interval '1 minute'
                     ORDER BY m.requested_at DESC LIMIT 1),
                    f.bundle_id, f.product_id, f.original_transaction_id, f.reported_at
                FROM reports AS f WHERE f.report = 'failure'
                ON CONFLICT DO NOTHING
                RETURNING 1
            )
            UPDATE mass_renewal_extensions m
            SET succeeded_count = s.succeeded_count, failed_count = s.failed_count,
                complete_date = s.reported_at, summary_notification_uuid = s.notification_uuid
            FROM reports AS s
            WHERE s.report = 'summary' AND m.environment = s.environment AND m.request_identifier = s.request_identifier
              AND m.summary_notification_uuid IS NULL
            """
        }
    }

    /// The batch's `RESCIND_CONSENT`s (``StoreRows/ConsentRescind``, migration 0018), only for a batch
    /// that has any: a new one is inserted (its customer null while none is known); a waiting one
    /// gets the customer this batch found, once.
    enum RecordConsentRescinds: RowsStatement {
        static let columns: [RowColumn<StoreRows.ConsentRescind>] = [
            .init("environment", "text", \.environment), .init("app_transaction_id", "text", \.appTransactionId),
            .init("event_key", "text", \.eventKey), .init("notification_uuid", "text", \.notificationUUID),
            .init("subtype", "text", \.subtype), .init("lookup", "text", \.lookup), .init("as_of", moments: \.asOf),
            .init("signed_date", moments: \.signedDate), .init("customer_id", "uuid", \.customerId),
        ]
        static func sql(rows: String) -> String {
            """
            INSERT INTO consent_rescinds
                (environment, app_transaction_id, event_key, notification_uuid, subtype, lookup, as_of, signed_date, customer_id, attributed_at)
            SELECT r.*, CASE WHEN r.customer_id IS NULL THEN NULL ELSE now() END FROM \(rows)
            ON CONFLICT (environment, app_transaction_id, event_key) DO UPDATE
            SET customer_id = EXCLUDED.customer_id, attributed_at = EXCLUDED.attributed_at
            WHERE consent_rescinds.customer_id IS NULL
            """
        }
    }

    /// The batch's new `EXTERNAL_PURCHASE_TOKEN`s (``StoreRows/ExternalPurchaseTokenRow``, migration
    /// 0019), each with its change event, waiting for the publisher. The batch holds only events not
    /// applied before, so a replay adds nothing; the conflict clause covers a concurrent copy.
    enum RecordExternalPurchaseTokens: RowsStatement {
        static let columns: [RowColumn<StoreRows.ExternalPurchaseTokenRow>] = [
            .init("environment", "text", \.environment), .init("event_key", "text", \.eventKey),
            .init("external_purchase_id", "text", \.externalPurchaseId), .init("subtype", "text", \.subtype),
            .init("body", json: \.body),
        ]
        static func sql(rows: String) -> String {
            """
            INSERT INTO external_purchase_tokens (environment, event_key, external_purchase_id, subtype, body)
            SELECT * FROM \(rows)
            ON CONFLICT (environment, event_key) DO NOTHING
            """
        }
    }

    /// Marks token events the broker acknowledged (``StoreRows/PublishedToken``): the row stays as
    /// the record of what Apple told.
    enum MarkExternalPurchaseTokensPublished: RowsStatement {
        static let columns: [RowColumn<StoreRows.PublishedToken>] = [
            .init("environment", "text", \.environment), .init("event_key", "text", \.eventKey),
        ]
        static func sql(rows: String) -> String {
            """
            UPDATE external_purchase_tokens t SET published_at = now() FROM \(rows)
            WHERE t.environment = r.environment AND t.event_key = r.event_key AND t.published_at IS NULL
            """
        }
    }
}
