-- grant_load(batch): locks the batch's purchases and app transactions and returns what the decisions
-- read, as rows of one shape told apart by row_kind: 'a' an applied event, 'p' a purchase's state,
-- 'e' an entitlement row, 'c' a consumable grant, 't' a stored transaction's signedDate (ms), 'r' a
-- RESCIND_CONSENT waiting for its customer (id the app transaction, body the event key, ent_key the
-- notification UUID, src_kind the subtype, product the lookup, t_from the signed date, as_of the
-- cause's moment). Only the purchases and transactions of events not applied yet are read. Each
-- statement plans once per connection (force_generic_plan) and finds rows through their key's index.
CREATE OR REPLACE FUNCTION grant_load(batch jsonb) RETURNS TABLE (
    row_kind text, env text, id text, body text, customer uuid, ent_key text, src_kind text, product text,
    is_active boolean, t_from timestamptz, t_until timestamptz, why text, ent_keys text[], qty integer,
    rev_reason smallint, as_of timestamptz, signed_ms float8)
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    SET search_path = public, pg_temp
AS $$
DECLARE
    pending jsonb;
    applied_environments text[];
    applied_keys text[];
BEGIN
    -- The purchases, and the app transactions ("a": a purchase's, or a RESCIND_CONSENT's), in one
    -- order: a rescind and its purchase's events decided beside each other, in two transactions,
    -- would each miss the other (neither committed yet) and leave the rescind waiting.
    PERFORM count(pg_advisory_xact_lock(hashtextextended(k.k, 0)))
    FROM (SELECT r->>'e' || ':' || (r->>'k') AS k FROM batch_rows(batch->'purchases') AS r
          UNION
          SELECT 'app-transaction:' || (r->>'e') || ':' || (r->>'a') FROM batch_rows(batch->'events') AS r WHERE r->>'a' IS NOT NULL
          ORDER BY 1) AS k;

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

    -- The RESCIND_CONSENTs still waiting for a customer, of the app transactions the events'
    -- purchases carry (for the batch that decides an owned one; locked until it commits).
    RETURN QUERY
    SELECT 'r', w.environment, w.app_transaction_id, w.event_key, NULL::uuid, w.notification_uuid, w.subtype, w.lookup, NULL::boolean,
           w.signed_date, NULL::timestamptz, NULL::text, NULL::text[], NULL::integer, NULL::smallint, w.as_of, NULL::float8
    FROM (SELECT DISTINCT r->>'e' AS e, r->>'a' AS a FROM batch_rows(pending) AS r WHERE r ? 'a') AS r
    JOIN consent_rescinds w ON w.environment = r.e AND w.app_transaction_id = r.a AND w.customer_id IS NULL
    FOR UPDATE OF w;
END
$$;

-- grant_load(arrays…): the same locks and reads from typed parameters (EntitlementStore's
-- GrantLoadArguments), answered as rows whose columns each hold one thing, named for it (decoded by
-- name; `row_kind` says which are set): 'a' an applied event (env, id the event key); 'p' a purchase's
-- state (purchase_state); 'e' an entitlement row; 'c' a consumable grant (id its transaction,
-- state_key its state's event); 't' a stored transaction's signed_ms; 'r' a RESCIND_CONSENT waiting
-- for its customer (id the app transaction). An event's carried transactions come as parallel arrays:
-- the event's environment and position (1-based), and the transaction ID. Every array is read once
-- (unnest, or a boolean looked up by position), so a batch of thousands costs linear time. The locks
-- are the jsonb overload's, so both releases exclude each other during a rolling update.
CREATE OR REPLACE FUNCTION grant_load(
    purchase_envs text[], purchase_ids text[], event_envs text[], event_keys text[], event_purchases text[],
    event_app_transactions text[], carried_envs text[], carried_events integer[], carried_transactions text[]
) RETURNS TABLE (
    row_kind text, env text, id text, purchase_state text, customer uuid, ent_key text, src_kind text, product text,
    is_active boolean, active_from_at timestamptz, active_until_at timestamptz, why text, ent_keys text[], qty integer,
    rev_reason smallint, as_of_at timestamptz, state_key text, notification text, sub text, how text, signed_at timestamptz,
    signed_ms float8)
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    SET search_path = public, pg_temp
AS $$
DECLARE
    -- Per event, by position: true when it was not applied before (its rows are read below).
    pending boolean[];
    applied_envs text[];
    applied_keys text[];
BEGIN
    -- The purchases, and the app transactions (a purchase's, or a RESCIND_CONSENT's), in one order.
    PERFORM count(pg_advisory_xact_lock(hashtextextended(k.k, 0)))
    FROM (SELECT r.e || ':' || r.p AS k FROM unnest(purchase_envs, purchase_ids) AS r(e, p)
          UNION
          SELECT 'app-transaction:' || r.e || ':' || r.a FROM unnest(event_envs, event_app_transactions) AS r(e, a) WHERE r.a IS NOT NULL
          ORDER BY 1) AS k;

    -- One dedupe lookup per event: the applied ones are returned, the others read below.
    SELECT array_agg(x.event_key IS NULL ORDER BY r.n), array_agg(r.e) FILTER (WHERE x.event_key IS NOT NULL),
           array_agg(r.k) FILTER (WHERE x.event_key IS NOT NULL)
      INTO pending, applied_envs, applied_keys
    FROM unnest(event_envs, event_keys) WITH ORDINALITY AS r(e, k, n)
    LEFT JOIN notifications x ON x.environment = r.e AND x.event_key = r.k;

    RETURN QUERY
    SELECT 'a', a.e, a.k, NULL::text, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::boolean, NULL::timestamptz,
           NULL::timestamptz, NULL::text, NULL::text[], NULL::integer, NULL::smallint, NULL::timestamptz, NULL::text, NULL::text,
           NULL::text, NULL::text, NULL::timestamptz, NULL::float8
    FROM unnest(applied_envs, applied_keys) AS a(e, k);
    IF NOT coalesce(true = ANY(pending), false) THEN
        RETURN;
    END IF;

    RETURN QUERY
    SELECT 'p', s.environment, s.original_transaction_id, s.state::text, NULL::uuid, NULL::text, NULL::text, NULL::text,
           NULL::boolean, NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text[], NULL::integer, NULL::smallint,
           NULL::timestamptz, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::float8
    FROM (SELECT DISTINCT r.e, r.p FROM unnest(event_envs, event_purchases, pending) AS r(e, p, q) WHERE r.q AND r.p IS NOT NULL) AS r
    JOIN subscriptions s ON s.environment = r.e AND s.original_transaction_id = r.p;

    RETURN QUERY
    SELECT 'e', en.environment, en.source_id, NULL::text, en.customer_id, en.entitlement_key, en.source_kind, en.product_id,
           en.active, en.active_from, en.active_until, en.reason, NULL::text[], NULL::integer, NULL::smallint, NULL::timestamptz,
           NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::float8
    FROM (SELECT DISTINCT r.e, r.p FROM unnest(event_envs, event_purchases, pending) AS r(e, p, q) WHERE r.q AND r.p IS NOT NULL) AS r
    JOIN entitlements en ON en.environment = r.e AND en.source_id = r.p;

    RETURN QUERY
    SELECT 'c', c.environment, c.transaction_id, NULL::text, c.customer_id, NULL::text, NULL::text, c.product_id, NULL::boolean,
           c.purchased_at, c.revoked_at, NULL::text, c.entitlement_keys, c.quantity, c.revocation_reason, c.state_as_of,
           c.state_event_key, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::float8
    FROM (SELECT DISTINCT r.e, r.p FROM unnest(event_envs, event_purchases, pending) AS r(e, p, q) WHERE r.q AND r.p IS NOT NULL) AS r
    JOIN consumable_grants c ON c.environment = r.e AND c.transaction_id = r.p;

    RETURN QUERY
    SELECT 't', t.environment, t.transaction_id, NULL::text, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::boolean,
           NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text[], NULL::integer, NULL::smallint, NULL::timestamptz,
           NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz, (t.payload->>'signedDate')::float8
    FROM (SELECT DISTINCT c.e, c.t FROM unnest(carried_envs, carried_events, carried_transactions) AS c(e, n, t)
          WHERE pending[c.n]) AS r
    JOIN transactions t ON t.environment = r.e AND t.transaction_id = r.t;

    -- The RESCIND_CONSENTs still waiting for a customer, of the app transactions the pending events
    -- carry (for the batch that decides an owned one; locked until it commits).
    RETURN QUERY
    SELECT 'r', w.environment, w.app_transaction_id, NULL::text, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::boolean,
           NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text[], NULL::integer, NULL::smallint, w.as_of, w.event_key,
           w.notification_uuid, w.subtype, w.lookup, w.signed_date, NULL::float8
    FROM (SELECT DISTINCT r.e, r.a FROM unnest(event_envs, event_app_transactions, pending) AS r(e, a, q)
          WHERE r.q AND r.a IS NOT NULL) AS r
    JOIN consent_rescinds w ON w.environment = r.e AND w.app_transaction_id = r.a AND w.customer_id IS NULL
    FOR UPDATE OF w;
END
$$;
