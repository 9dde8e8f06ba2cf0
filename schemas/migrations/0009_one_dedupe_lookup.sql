-- grant_load (migration 0007) looked every event of a batch up in notifications twice: once to return
-- the applied ones, once more to keep the others. Now one lookup does both. Otherwise unchanged
-- (its statements planned once per connection, as migration 0008 set).
--
-- entitlement_changes_by_customer is dropped: no query reads it (a customer's history is read by
-- customer and seq, which the table's unique key serves), and every change wrote an entry to it.
DROP INDEX entitlement_changes_by_customer;

CREATE OR REPLACE FUNCTION grant_load(batch jsonb) RETURNS TABLE (
    row_kind text, env text, id text, body text, customer uuid, ent_key text, src_kind text, product text,
    is_active boolean, t_from timestamptz, t_until timestamptz, why text, ent_keys text[], qty integer,
    rev_reason smallint, as_of timestamptz, signed_ms float8)
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
    pending jsonb;
    applied_environments text[];
    applied_keys text[];
BEGIN
    PERFORM count(pg_advisory_xact_lock(hashtextextended(k.k, 0)))
    FROM (SELECT r->>'e' || ':' || (r->>'k') AS k FROM batch_rows(batch->'purchases') AS r ORDER BY 1) AS k;

    -- Each statement below takes a new snapshot, so it sees what a writer that held a lock committed.
    -- One dedupe lookup per event: the applied ones are returned, the others read below.
    SELECT coalesce(jsonb_agg(r) FILTER (WHERE n.event_key IS NULL), '[]'::jsonb),
           array_agg(n.environment) FILTER (WHERE n.event_key IS NOT NULL),
           array_agg(n.event_key) FILTER (WHERE n.event_key IS NOT NULL)
      INTO pending, applied_environments, applied_keys
    FROM batch_rows(batch->'events') AS r LEFT JOIN notifications n ON n.environment = r->>'e' AND n.event_key = r->>'k';

    RETURN QUERY
    SELECT 'a', a.e, a.k, NULL::text, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::boolean,
           NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text[], NULL::integer, NULL::smallint, NULL::timestamptz, NULL::float8
    FROM unnest(applied_environments, applied_keys) AS a(e, k);
    IF jsonb_array_length(pending) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    SELECT 'p', s.environment, s.original_transaction_id, s.state::text, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::boolean,
           NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text[], NULL::integer, NULL::smallint, NULL::timestamptz, NULL::float8
    FROM (SELECT DISTINCT r->>'e' AS e, r->>'p' AS p FROM batch_rows(pending) AS r WHERE r ? 'p') AS r
    JOIN subscriptions s ON s.environment = r.e AND s.original_transaction_id = r.p;

    RETURN QUERY
    SELECT 'e', en.environment, en.source_id, NULL::text, en.customer_id, en.entitlement_key, en.source_kind, en.product_id, en.active,
           en.active_from, en.active_until, en.reason, NULL::text[], NULL::integer, NULL::smallint, NULL::timestamptz, NULL::float8
    FROM (SELECT DISTINCT r->>'e' AS e, r->>'p' AS p FROM batch_rows(pending) AS r WHERE r ? 'p') AS r
    JOIN entitlements en ON en.environment = r.e AND en.source_id = r.p;

    RETURN QUERY
    SELECT 'c', c.environment, c.transaction_id, c.state_event_key, c.customer_id, NULL::text, NULL::text, c.product_id, NULL::boolean,
           c.purchased_at, c.revoked_at, NULL::text, c.entitlement_keys, c.quantity, c.revocation_reason, c.state_as_of, NULL::float8
    FROM (SELECT DISTINCT r->>'e' AS e, r->>'p' AS p FROM batch_rows(pending) AS r WHERE r ? 'p') AS r
    JOIN consumable_grants c ON c.environment = r.e AND c.transaction_id = r.p;

    RETURN QUERY
    SELECT 't', t.environment, t.transaction_id, NULL::text, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::boolean,
           NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text[], NULL::integer, NULL::smallint, NULL::timestamptz,
           (t.payload->>'signedDate')::float8
    FROM (SELECT DISTINCT r->>'e' AS e, x.tid FROM batch_rows(pending) AS r, jsonb_array_elements_text(r->'t') AS x(tid)) AS r
    JOIN transactions t ON t.environment = r.e AND t.transaction_id = r.tid;
END
$$;
