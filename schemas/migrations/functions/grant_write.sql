-- grant_write(batch): writes the rows a batch's decisions changed, table by table (each member of
-- the jsonb object an array, absent when empty), and numbers each customer's changes from its
-- counter into the history and the outbox (with the trace context of the record that caused it).
-- Returns how many changes it numbered.
CREATE OR REPLACE FUNCTION grant_write(batch jsonb) RETURNS integer
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    SET search_path = public, pg_temp
AS $$
DECLARE
    written integer;
BEGIN
    IF batch ? 'customers' THEN
        INSERT INTO customers (environment, customer_id, external_user_id)
        SELECT r->>'environment', (r->>'customerId')::uuid, r->>'externalUserId' FROM batch_rows(batch->'customers') AS r
        ORDER BY 1, 2
        ON CONFLICT (environment, customer_id) DO NOTHING;
        UPDATE customers c SET external_user_id = r->>'externalUserId'
        FROM batch_rows(batch->'customers') AS r
        WHERE r->>'externalUserId' IS NOT NULL AND c.environment = r->>'environment'
          AND c.customer_id = (r->>'customerId')::uuid AND c.external_user_id IS NULL;
    END IF;

    IF batch ? 'transactions' THEN
        INSERT INTO transactions (environment, transaction_id, original_transaction_id, web_order_line_item_id, bundle_id,
            product_id, subscription_group_id, product_type, purchase_date, original_purchase_date, expires_date, quantity,
            app_account_token, in_app_ownership_type, signed_date, revocation_date, revocation_reason, revocation_type,
            revocation_percentage, is_upgraded, offer_type, offer_identifier, offer_discount_type, offer_period, storefront,
            storefront_id, transaction_reason, currency, price_milliunits, app_transaction_id, billing_plan_type, payload, raw_jws)
        SELECT r->>'environment', p->>'transactionId', p->>'originalTransactionId', p->>'webOrderLineItemId', p->>'bundleId',
            p->>'productId', p->>'subscriptionGroupIdentifier', p->>'type', ms_to_timestamptz(p->'purchaseDate'),
            ms_to_timestamptz(p->'originalPurchaseDate'), ms_to_timestamptz(p->'expiresDate'), (p->>'quantity')::integer,
            (p->>'appAccountToken')::uuid, p->>'inAppOwnershipType', ms_to_timestamptz(p->'signedDate'),
            ms_to_timestamptz(p->'revocationDate'), (p->>'revocationReason')::smallint, p->>'revocationType',
            (p->>'revocationPercentage')::integer, (p->>'isUpgraded')::boolean, (p->>'offerType')::smallint,
            p->>'offerIdentifier', p->>'offerDiscountType', p->>'offerPeriod', p->>'storefront', p->>'storefrontId',
            p->>'transactionReason', p->>'currency', (p->>'price')::bigint, p->>'appTransactionId', p->>'billingPlanType',
            p, r->>'rawJWS'
        FROM batch_rows(batch->'transactions') AS r, LATERAL (SELECT r->'transaction' AS p) AS x
        ON CONFLICT (environment, transaction_id) DO UPDATE SET (original_transaction_id, web_order_line_item_id, bundle_id,
            product_id, subscription_group_id, product_type, purchase_date, original_purchase_date, expires_date, quantity,
            app_account_token, in_app_ownership_type, signed_date, revocation_date, revocation_reason, revocation_type,
            revocation_percentage, is_upgraded, offer_type, offer_identifier, offer_discount_type, offer_period, storefront,
            storefront_id, transaction_reason, currency, price_milliunits, app_transaction_id, billing_plan_type, payload, raw_jws)
          = ROW(EXCLUDED.original_transaction_id, EXCLUDED.web_order_line_item_id, EXCLUDED.bundle_id, EXCLUDED.product_id,
            EXCLUDED.subscription_group_id, EXCLUDED.product_type, EXCLUDED.purchase_date, EXCLUDED.original_purchase_date,
            EXCLUDED.expires_date, EXCLUDED.quantity, EXCLUDED.app_account_token, EXCLUDED.in_app_ownership_type,
            EXCLUDED.signed_date, EXCLUDED.revocation_date, EXCLUDED.revocation_reason, EXCLUDED.revocation_type,
            EXCLUDED.revocation_percentage, EXCLUDED.is_upgraded, EXCLUDED.offer_type, EXCLUDED.offer_identifier,
            EXCLUDED.offer_discount_type, EXCLUDED.offer_period, EXCLUDED.storefront, EXCLUDED.storefront_id,
            EXCLUDED.transaction_reason, EXCLUDED.currency, EXCLUDED.price_milliunits, EXCLUDED.app_transaction_id,
            EXCLUDED.billing_plan_type, EXCLUDED.payload, EXCLUDED.raw_jws)
        WHERE transactions.signed_date IS NULL OR EXCLUDED.signed_date > transactions.signed_date;
    END IF;

    IF batch ? 'purchases' THEN
        INSERT INTO subscriptions (environment, original_transaction_id, product_type, product_id, auto_renew_product_id,
            auto_renew_enabled, lifecycle, apple_status, purchase_date, expires_at, grace_period_expires_at, is_in_billing_retry,
            price_increase_status, expiration_intent, revoked_at, revocation_reason, latest_transaction_id,
            subscription_group_id, owner_customer_id, state_as_of, state_event_key, last_signed_date, state)
        SELECT s->'key'->>'environment', s->'key'->>'originalTransactionId', s->>'productType', s->>'productId',
            s->>'autoRenewProductId', (s->>'autoRenewEnabled')::boolean, s->>'lifecycle', (s->>'appleStatus')::smallint,
            ms_to_timestamptz(s->'purchaseDate'), ms_to_timestamptz(s->'expiresAt'), ms_to_timestamptz(s->'gracePeriodExpiresAt'),
            (s->>'isInBillingRetry')::boolean, (s->>'priceIncreaseStatus')::smallint, (s->>'expirationIntent')::smallint,
            ms_to_timestamptz(s->'revokedAt'), (s->>'revocationReason')::smallint, s->>'latestTransactionId',
            s->>'subscriptionGroupId', (r->>'owner')::uuid, ms_to_timestamptz(s->'version'->'asOf'),
            s->'version'->>'eventKey', ms_to_timestamptz(s->'lastSignedDate'), s
        FROM batch_rows(batch->'purchases') AS r, LATERAL (SELECT r->'state' AS s) AS x
        ON CONFLICT (environment, original_transaction_id) DO UPDATE SET (product_type, product_id, auto_renew_product_id,
            auto_renew_enabled, lifecycle, apple_status, purchase_date, expires_at, grace_period_expires_at, is_in_billing_retry,
            price_increase_status, expiration_intent, revoked_at, revocation_reason, latest_transaction_id,
            subscription_group_id, owner_customer_id, state_as_of, state_event_key, last_signed_date, state)
          = ROW(EXCLUDED.product_type, EXCLUDED.product_id, EXCLUDED.auto_renew_product_id, EXCLUDED.auto_renew_enabled,
            EXCLUDED.lifecycle, EXCLUDED.apple_status, EXCLUDED.purchase_date, EXCLUDED.expires_at,
            EXCLUDED.grace_period_expires_at, EXCLUDED.is_in_billing_retry, EXCLUDED.price_increase_status,
            EXCLUDED.expiration_intent, EXCLUDED.revoked_at, EXCLUDED.revocation_reason, EXCLUDED.latest_transaction_id,
            EXCLUDED.subscription_group_id, EXCLUDED.owner_customer_id, EXCLUDED.state_as_of, EXCLUDED.state_event_key,
            EXCLUDED.last_signed_date, EXCLUDED.state);
    END IF;

    IF batch ? 'claims' THEN
        INSERT INTO ownership_claims (environment, original_transaction_id, customer_id, first_claimed_at, verified, status,
            cause_event_key)
        SELECT r->>'environment', r->>'originalTransactionId', (r->>'customerId')::uuid, ms_to_timestamptz(r->'firstClaimedAt'),
            (r->>'verified')::boolean, r->>'status', r->>'causeEventKey'
        FROM batch_rows(batch->'claims') AS r
        ON CONFLICT (environment, original_transaction_id, customer_id) DO UPDATE SET
            (first_claimed_at, verified, status, cause_event_key)
          = ROW(EXCLUDED.first_claimed_at, EXCLUDED.verified, EXCLUDED.status, EXCLUDED.cause_event_key);
    END IF;

    IF batch ? 'deletions' THEN
        DELETE FROM entitlements en USING batch_rows(batch->'deletions') AS r
        WHERE en.environment = r->>'environment' AND en.customer_id = (r->>'customerId')::uuid
          AND en.entitlement_key = r->>'entitlementKey' AND en.source_id = r->>'sourceId';
    END IF;

    IF batch ? 'entitlements' THEN
        INSERT INTO entitlements (environment, customer_id, entitlement_key, source_id, source_kind, product_id, active,
            active_from, active_until, reason)
        SELECT r->>'environment', (r->>'customerId')::uuid, r->>'entitlementKey', r->>'sourceId', r->>'sourceKind',
            r->>'productId', (r->>'active')::boolean, ms_to_timestamptz(r->'activeFrom'), ms_to_timestamptz(r->'activeUntil'),
            r->>'reason'
        FROM batch_rows(batch->'entitlements') AS r
        ON CONFLICT (environment, customer_id, entitlement_key, source_id) DO UPDATE SET
            (source_kind, product_id, active, active_from, active_until, reason)
          = ROW(EXCLUDED.source_kind, EXCLUDED.product_id, EXCLUDED.active, EXCLUDED.active_from, EXCLUDED.active_until,
            EXCLUDED.reason);
    END IF;

    IF batch ? 'consumables' THEN
        INSERT INTO consumable_grants (environment, transaction_id, customer_id, product_id, entitlement_keys, quantity,
            purchased_at, revoked_at, revocation_reason, state_as_of, state_event_key)
        SELECT r->>'environment', r->>'transactionId', (r->>'customerId')::uuid, r->>'productId',
            ARRAY(SELECT jsonb_array_elements_text(r->'entitlementKeys')), (r->>'quantity')::integer,
            ms_to_timestamptz(r->'purchasedAt'), ms_to_timestamptz(r->'revokedAt'), (r->>'revocationReason')::smallint,
            ms_to_timestamptz(r->'asOf'), r->>'eventKey'
        FROM batch_rows(batch->'consumables') AS r
        ON CONFLICT (environment, transaction_id) DO UPDATE SET
            (customer_id, product_id, entitlement_keys, quantity, purchased_at, revoked_at, revocation_reason, state_as_of,
             state_event_key)
          = ROW(EXCLUDED.customer_id, EXCLUDED.product_id, EXCLUDED.entitlement_keys, EXCLUDED.quantity, EXCLUDED.purchased_at,
            EXCLUDED.revoked_at, EXCLUDED.revocation_reason, EXCLUDED.state_as_of, EXCLUDED.state_event_key);
    END IF;

    IF batch ? 'notifications' THEN
        INSERT INTO notifications (environment, event_key, notification_uuid, kind, source, notification_type, subtype,
            original_transaction_id, transaction_id, signed_date, verified_at, ingested_at, outcome, note, trace_id)
        -- A batch's `receivedAt` is verify's moment (the name the releases that send jsonb gave it).
        SELECT r->>'environment', r->>'eventKey', r->>'notificationUUID', r->>'kind', r->>'source', r->>'type', r->>'subtype',
            r->>'originalTransactionId', r->>'transactionId', ms_to_timestamptz(r->'signedDate'),
            ms_to_timestamptz(r->'receivedAt'), ms_to_timestamptz(r->'ingestedAt'), r->>'outcome', r->>'note', r->>'traceId'
        FROM batch_rows(batch->'notifications') AS r
        ON CONFLICT DO NOTHING;
    END IF;

    IF batch ? 'consumptionRequests' THEN
        INSERT INTO consumption_requests (environment, notification_uuid, bundle_id, transaction_id, original_transaction_id,
            reason, signed_date, deadline)
        SELECT r->>'environment', r->>'notificationUUID', r->>'bundleId', r->>'transactionId', r->>'originalTransactionId',
            r->>'reason', ms_to_timestamptz(r->'signedDate'), ms_to_timestamptz(r->'deadline')
        FROM batch_rows(batch->'consumptionRequests') AS r
        ON CONFLICT DO NOTHING;
    END IF;

    IF NOT batch ? 'changes' THEN
        RETURN 0;
    END IF;
    -- The counters of the customers with changes, locked in key order: a rollback takes them back
    -- with everything else, so no number is ever skipped or reused. batch->'changes' has one element
    -- per customer, its changes in batch order.
    PERFORM 1 FROM batch_rows(batch->'changes') AS r
    JOIN customers c ON c.environment = r->>'environment' AND c.customer_id = (r->>'customerId')::uuid
    ORDER BY c.environment, c.customer_id FOR UPDATE OF c;
    -- Each customer's counter moves on by its number of changes, which take the numbers in between.
    WITH moved AS (
        UPDATE customers c SET next_seq = c.next_seq + jsonb_array_length(r->'changes')
        FROM batch_rows(batch->'changes') AS r
        WHERE c.environment = r->>'environment' AND c.customer_id = (r->>'customerId')::uuid
        RETURNING c.environment AS e, c.customer_id AS k, c.next_seq - jsonb_array_length(r->'changes') AS first, r->'changes' AS changes,
            r->'traces' AS traces
    ), numbered AS (
        SELECT m.e, m.k, m.first + x.n - 1 AS seq, x.b, NULLIF(m.traces->>(x.n::integer - 1), '') AS t
        FROM moved AS m, jsonb_array_elements(m.changes) WITH ORDINALITY AS x(b, n)
    ), history AS (
        INSERT INTO entitlement_changes (environment, customer_id, seq, entitlement_key, source_id, product_id, change, active,
            active_until, reason, quantity, cause_event_key, cause_type, cause_subtype, cause_lookup, cause_as_of,
            cause_signed_date)
        SELECT e, k, seq, b->>'entitlementKey', b->>'sourceId', b->>'productId', b->>'change', (b->>'active')::boolean,
            ms_to_timestamptz(b->'activeUntil'), b->>'reason', (b->>'quantity')::integer, b->'cause'->>'eventKey',
            b->'cause'->>'type', b->'cause'->>'subtype', b->'cause'->>'lookup', ms_to_timestamptz(b->'cause'->'asOf'),
            ms_to_timestamptz(b->'cause'->'signedDate')
        FROM numbered
    )
    INSERT INTO outbox (environment, customer_id, seq, body, trace_context)
    SELECT e, k, seq, jsonb_set(b, '{seq}', to_jsonb(seq)), t FROM numbered;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END
$$;

-- grant_write(columns…): the same writes from typed parameters, one array per column of each table
-- (EntitlementStore's GrantWriteColumns binds them in this order; StoreWriteTests checks the
-- signature against it), read with unnest: no JSON to parse but Apple's own payloads. Each change
-- comes as its event's bytes around the sequence number (`event_head`, `event_tail`, written by
-- grant's encoder); the number is allocated here from the customer's counter. The jsonb overload
-- above stays while replicas of the previous release may run (docs/migrations.md, "Functions").
CREATE OR REPLACE FUNCTION grant_write(
    customer_env text[], customer_uuid uuid[], customer_external_user text[],
    transaction_env text[], transaction_payload jsonb[], transaction_raw_jws text[],
    purchase_state jsonb[], purchase_owner uuid[],
    claim_env text[], claim_purchase text[], claim_customer uuid[], claim_first_at timestamptz[], claim_verified boolean[],
    claim_status text[], claim_cause text[],
    deletion_env text[], deletion_customer uuid[], deletion_key text[], deletion_source text[],
    entitlement_env text[], entitlement_customer uuid[], entitlement_name text[], entitlement_source text[],
    entitlement_source_kind text[], entitlement_product text[], entitlement_active boolean[], entitlement_from timestamptz[],
    entitlement_until timestamptz[], entitlement_reason text[],
    consumable_env text[], consumable_transaction text[], consumable_customer uuid[], consumable_product text[],
    consumable_keys jsonb[], consumable_quantity integer[], consumable_purchased_at timestamptz[],
    consumable_revoked_at timestamptz[], consumable_revocation_reason smallint[], consumable_as_of timestamptz[],
    consumable_event_key text[],
    notification_env text[], notification_key text[], notification_id text[], notification_kind text[],
    notification_source text[], notification_type_name text[], notification_subtype text[], notification_purchase text[],
    notification_transaction text[], notification_signed_date timestamptz[], notification_verified_at timestamptz[],
    notification_ingested_at timestamptz[], notification_outcome text[], notification_note text[], notification_trace_id text[],
    request_env text[], request_uuid text[], request_bundle text[], request_transaction text[], request_purchase text[],
    request_reason text[], request_signed_date timestamptz[], request_deadline timestamptz[],
    change_env text[], change_customer uuid[], change_index integer[], change_event_head text[], change_event_tail text[],
    change_trace text[],
    change_kind text[], change_key text[], change_source text[], change_product text[], change_active boolean[],
    change_until timestamptz[], change_reason text[], change_quantity integer[], change_cause_key text[],
    change_cause_type text[], change_cause_subtype text[], change_cause_lookup text[], change_cause_as_of timestamptz[],
    change_cause_signed_date timestamptz[]
) RETURNS integer
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    SET search_path = public, pg_temp
AS $$
DECLARE
    written integer := 0;
BEGIN
    IF cardinality(customer_env) > 0 THEN
        INSERT INTO customers (environment, customer_id, external_user_id)
        SELECT r.e, r.k, r.x FROM unnest(customer_env, customer_uuid, customer_external_user) AS r(e, k, x)
        ORDER BY 1, 2
        ON CONFLICT (environment, customer_id) DO NOTHING;
        UPDATE customers c SET external_user_id = r.x
        FROM unnest(customer_env, customer_uuid, customer_external_user) AS r(e, k, x)
        WHERE r.x IS NOT NULL AND c.environment = r.e AND c.customer_id = r.k AND c.external_user_id IS NULL;
    END IF;

    IF cardinality(transaction_env) > 0 THEN
        INSERT INTO transactions (environment, transaction_id, original_transaction_id, web_order_line_item_id, bundle_id,
            product_id, subscription_group_id, product_type, purchase_date, original_purchase_date, expires_date, quantity,
            app_account_token, in_app_ownership_type, signed_date, revocation_date, revocation_reason, revocation_type,
            revocation_percentage, is_upgraded, offer_type, offer_identifier, offer_discount_type, offer_period, storefront,
            storefront_id, transaction_reason, currency, price_milliunits, app_transaction_id, billing_plan_type, payload, raw_jws)
        SELECT r.e, p->>'transactionId', p->>'originalTransactionId', p->>'webOrderLineItemId', p->>'bundleId',
            p->>'productId', p->>'subscriptionGroupIdentifier', p->>'type', ms_to_timestamptz(p->'purchaseDate'),
            ms_to_timestamptz(p->'originalPurchaseDate'), ms_to_timestamptz(p->'expiresDate'), (p->>'quantity')::integer,
            (p->>'appAccountToken')::uuid, p->>'inAppOwnershipType', ms_to_timestamptz(p->'signedDate'),
            ms_to_timestamptz(p->'revocationDate'), (p->>'revocationReason')::smallint, p->>'revocationType',
            (p->>'revocationPercentage')::integer, (p->>'isUpgraded')::boolean, (p->>'offerType')::smallint,
            p->>'offerIdentifier', p->>'offerDiscountType', p->>'offerPeriod', p->>'storefront', p->>'storefrontId',
            p->>'transactionReason', p->>'currency', (p->>'price')::bigint, p->>'appTransactionId', p->>'billingPlanType',
            p, r.raw
        FROM unnest(transaction_env, transaction_payload, transaction_raw_jws) AS r(e, p, raw)
        ON CONFLICT (environment, transaction_id) DO UPDATE SET (original_transaction_id, web_order_line_item_id, bundle_id,
            product_id, subscription_group_id, product_type, purchase_date, original_purchase_date, expires_date, quantity,
            app_account_token, in_app_ownership_type, signed_date, revocation_date, revocation_reason, revocation_type,
            revocation_percentage, is_upgraded, offer_type, offer_identifier, offer_discount_type, offer_period, storefront,
            storefront_id, transaction_reason, currency, price_milliunits, app_transaction_id, billing_plan_type, payload, raw_jws)
          = ROW(EXCLUDED.original_transaction_id, EXCLUDED.web_order_line_item_id, EXCLUDED.bundle_id, EXCLUDED.product_id,
            EXCLUDED.subscription_group_id, EXCLUDED.product_type, EXCLUDED.purchase_date, EXCLUDED.original_purchase_date,
            EXCLUDED.expires_date, EXCLUDED.quantity, EXCLUDED.app_account_token, EXCLUDED.in_app_ownership_type,
            EXCLUDED.signed_date, EXCLUDED.revocation_date, EXCLUDED.revocation_reason, EXCLUDED.revocation_type,
            EXCLUDED.revocation_percentage, EXCLUDED.is_upgraded, EXCLUDED.offer_type, EXCLUDED.offer_identifier,
            EXCLUDED.offer_discount_type, EXCLUDED.offer_period, EXCLUDED.storefront, EXCLUDED.storefront_id,
            EXCLUDED.transaction_reason, EXCLUDED.currency, EXCLUDED.price_milliunits, EXCLUDED.app_transaction_id,
            EXCLUDED.billing_plan_type, EXCLUDED.payload, EXCLUDED.raw_jws)
        WHERE transactions.signed_date IS NULL OR EXCLUDED.signed_date > transactions.signed_date;
    END IF;

    IF cardinality(purchase_state) > 0 THEN
        INSERT INTO subscriptions (environment, original_transaction_id, product_type, product_id, auto_renew_product_id,
            auto_renew_enabled, lifecycle, apple_status, purchase_date, expires_at, grace_period_expires_at, is_in_billing_retry,
            price_increase_status, expiration_intent, revoked_at, revocation_reason, latest_transaction_id,
            subscription_group_id, owner_customer_id, state_as_of, state_event_key, last_signed_date, state)
        SELECT s->'key'->>'environment', s->'key'->>'originalTransactionId', s->>'productType', s->>'productId',
            s->>'autoRenewProductId', (s->>'autoRenewEnabled')::boolean, s->>'lifecycle', (s->>'appleStatus')::smallint,
            ms_to_timestamptz(s->'purchaseDate'), ms_to_timestamptz(s->'expiresAt'), ms_to_timestamptz(s->'gracePeriodExpiresAt'),
            (s->>'isInBillingRetry')::boolean, (s->>'priceIncreaseStatus')::smallint, (s->>'expirationIntent')::smallint,
            ms_to_timestamptz(s->'revokedAt'), (s->>'revocationReason')::smallint, s->>'latestTransactionId',
            s->>'subscriptionGroupId', r.owner, ms_to_timestamptz(s->'version'->'asOf'),
            s->'version'->>'eventKey', ms_to_timestamptz(s->'lastSignedDate'), s
        FROM unnest(purchase_state, purchase_owner) AS r(s, owner)
        ON CONFLICT (environment, original_transaction_id) DO UPDATE SET (product_type, product_id, auto_renew_product_id,
            auto_renew_enabled, lifecycle, apple_status, purchase_date, expires_at, grace_period_expires_at, is_in_billing_retry,
            price_increase_status, expiration_intent, revoked_at, revocation_reason, latest_transaction_id,
            subscription_group_id, owner_customer_id, state_as_of, state_event_key, last_signed_date, state)
          = ROW(EXCLUDED.product_type, EXCLUDED.product_id, EXCLUDED.auto_renew_product_id, EXCLUDED.auto_renew_enabled,
            EXCLUDED.lifecycle, EXCLUDED.apple_status, EXCLUDED.purchase_date, EXCLUDED.expires_at,
            EXCLUDED.grace_period_expires_at, EXCLUDED.is_in_billing_retry, EXCLUDED.price_increase_status,
            EXCLUDED.expiration_intent, EXCLUDED.revoked_at, EXCLUDED.revocation_reason, EXCLUDED.latest_transaction_id,
            EXCLUDED.subscription_group_id, EXCLUDED.owner_customer_id, EXCLUDED.state_as_of, EXCLUDED.state_event_key,
            EXCLUDED.last_signed_date, EXCLUDED.state);
    END IF;

    IF cardinality(claim_env) > 0 THEN
        INSERT INTO ownership_claims (environment, original_transaction_id, customer_id, first_claimed_at, verified, status,
            cause_event_key)
        SELECT * FROM unnest(claim_env, claim_purchase, claim_customer, claim_first_at, claim_verified, claim_status, claim_cause)
        ON CONFLICT (environment, original_transaction_id, customer_id) DO UPDATE SET
            (first_claimed_at, verified, status, cause_event_key)
          = ROW(EXCLUDED.first_claimed_at, EXCLUDED.verified, EXCLUDED.status, EXCLUDED.cause_event_key);
    END IF;

    IF cardinality(deletion_env) > 0 THEN
        DELETE FROM entitlements en USING unnest(deletion_env, deletion_customer, deletion_key, deletion_source) AS r(e, k, ek, s)
        WHERE en.environment = r.e AND en.customer_id = r.k AND en.entitlement_key = r.ek AND en.source_id = r.s;
    END IF;

    IF cardinality(entitlement_env) > 0 THEN
        INSERT INTO entitlements (environment, customer_id, entitlement_key, source_id, source_kind, product_id, active,
            active_from, active_until, reason)
        SELECT * FROM unnest(entitlement_env, entitlement_customer, entitlement_name, entitlement_source, entitlement_source_kind,
            entitlement_product, entitlement_active, entitlement_from, entitlement_until, entitlement_reason)
        ON CONFLICT (environment, customer_id, entitlement_key, source_id) DO UPDATE SET
            (source_kind, product_id, active, active_from, active_until, reason)
          = ROW(EXCLUDED.source_kind, EXCLUDED.product_id, EXCLUDED.active, EXCLUDED.active_from, EXCLUDED.active_until,
            EXCLUDED.reason);
    END IF;

    IF cardinality(consumable_env) > 0 THEN
        INSERT INTO consumable_grants (environment, transaction_id, customer_id, product_id, entitlement_keys, quantity,
            purchased_at, revoked_at, revocation_reason, state_as_of, state_event_key)
        SELECT r.e, r.t, r.k, r.p, ARRAY(SELECT jsonb_array_elements_text(r.keys)), r.q, r.pa, r.ra, r.rr, r.a, r.ek
        FROM unnest(consumable_env, consumable_transaction, consumable_customer, consumable_product, consumable_keys,
            consumable_quantity, consumable_purchased_at, consumable_revoked_at, consumable_revocation_reason, consumable_as_of,
            consumable_event_key) AS r(e, t, k, p, keys, q, pa, ra, rr, a, ek)
        ON CONFLICT (environment, transaction_id) DO UPDATE SET
            (customer_id, product_id, entitlement_keys, quantity, purchased_at, revoked_at, revocation_reason, state_as_of,
             state_event_key)
          = ROW(EXCLUDED.customer_id, EXCLUDED.product_id, EXCLUDED.entitlement_keys, EXCLUDED.quantity, EXCLUDED.purchased_at,
            EXCLUDED.revoked_at, EXCLUDED.revocation_reason, EXCLUDED.state_as_of, EXCLUDED.state_event_key);
    END IF;

    IF cardinality(notification_env) > 0 THEN
        INSERT INTO notifications (environment, event_key, notification_uuid, kind, source, notification_type, subtype,
            original_transaction_id, transaction_id, signed_date, verified_at, ingested_at, outcome, note, trace_id)
        SELECT * FROM unnest(notification_env, notification_key, notification_id, notification_kind, notification_source,
            notification_type_name, notification_subtype, notification_purchase, notification_transaction, notification_signed_date,
            notification_verified_at, notification_ingested_at, notification_outcome, notification_note, notification_trace_id)
        ON CONFLICT DO NOTHING;
    END IF;

    IF cardinality(request_env) > 0 THEN
        INSERT INTO consumption_requests (environment, notification_uuid, bundle_id, transaction_id, original_transaction_id,
            reason, signed_date, deadline)
        SELECT * FROM unnest(request_env, request_uuid, request_bundle, request_transaction, request_purchase, request_reason,
            request_signed_date, request_deadline)
        ON CONFLICT DO NOTHING;
    END IF;

    IF cardinality(change_env) = 0 THEN
        RETURN 0;
    END IF;
    -- The counters of the customers with changes, locked in key order: a rollback takes them back
    -- with everything else, so no number is ever skipped or reused.
    PERFORM 1 FROM customers c
    JOIN (SELECT DISTINCT r.e, r.k FROM unnest(change_env, change_customer) AS r(e, k)) AS r
      ON c.environment = r.e AND c.customer_id = r.k
    ORDER BY c.environment, c.customer_id FOR UPDATE OF c;
    -- A customer's changes take the numbers from its counter on, in batch order (change_index is a
    -- change's place among its customer's, from 1); each change finds its counter through the key.
    WITH numbered AS (
        SELECT r.*, c.next_seq + r.i - 1 AS seq
        FROM unnest(change_env, change_customer, change_index, change_event_head, change_event_tail, change_trace, change_kind,
            change_key, change_source, change_product, change_active, change_until, change_reason, change_quantity,
            change_cause_key, change_cause_type, change_cause_subtype, change_cause_lookup, change_cause_as_of,
            change_cause_signed_date)
            AS r(e, k, i, head, tail, trace, kind, ek, src, product, active, until, reason, qty, cause_key, cause_type,
                cause_subtype, cause_lookup, cause_as_of, cause_signed)
        JOIN customers c ON c.environment = r.e AND c.customer_id = r.k
    ), history AS (
        INSERT INTO entitlement_changes (environment, customer_id, seq, entitlement_key, source_id, product_id, change, active,
            active_until, reason, quantity, cause_event_key, cause_type, cause_subtype, cause_lookup, cause_as_of,
            cause_signed_date)
        SELECT e, k, seq, ek, src, product, kind, active, until, reason, qty, cause_key, cause_type, cause_subtype, cause_lookup,
            cause_as_of, cause_signed
        FROM numbered
    )
    INSERT INTO outbox (environment, customer_id, seq, body, trace_context)
    SELECT e, k, seq, head || seq::text || tail, trace FROM numbered;
    GET DIAGNOSTICS written = ROW_COUNT;
    -- Then each counter moves past the numbers its customer's changes took.
    UPDATE customers c SET next_seq = c.next_seq + r.count
    FROM (SELECT r.e, r.k, count(*) AS count FROM unnest(change_env, change_customer) AS r(e, k) GROUP BY r.e, r.k) AS r
    WHERE c.environment = r.e AND c.customer_id = r.k;
    RETURN written;
END
$$;
