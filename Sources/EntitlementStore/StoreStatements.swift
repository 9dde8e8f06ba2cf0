/// The SQL of the store. A batch is applied by two server-side functions (migrations 0004, 0005, 0007, 0009), each
/// taking one `jsonb` object (``StoreRows/Load``, ``StoreRows/Write``): `grant_load` locks the
/// batch's purchases and returns everything the decisions read, `grant_write` writes the rows they
/// changed. Inside, `batch_rows` (migration 0003) unpacks each array, estimated as one row so every
/// row is found through its key's index. A batch of any size is four round trips: BEGIN, load,
/// write, COMMIT. Their statements are planned once per connection (migration 0008).
enum StoreStatements {
    /// `r` is one element of the `$1` array.
    private static let rows = "FROM batch_rows($1::text::jsonb) AS r"

    /// One row per applied event, purchase state, entitlement row, consumable grant and stored
    /// transaction of the batch (columns: ``EntitlementStore``'s `Load`).
    static let load = "SELECT * FROM grant_load($1::text::jsonb)"

    /// One row: how many changes were numbered and written.
    static let write = "SELECT grant_write($1::text::jsonb)"

    /// Deletes published outbox rows (``StoreRows/SeqAllocation`` rows: customer and `seq`): the
    /// outbox keeps only what waits (migration 0010); the history is `entitlement_changes`.
    static let deletePublished = """
        DELETE FROM outbox o USING batch_rows($1::text::jsonb) AS r
        WHERE o.environment = r->>'environment' AND o.customer_id = (r->>'customerId')::uuid AND o.seq = (r->>'nextSeq')::bigint
        """

    static let insertProducts = """
        INSERT INTO product_entitlements (product_id, entitlement_key, duration_days)
        SELECT r->>'productId', r->>'entitlementKey', (r->>'durationDays')::integer \(rows)
        """
}
