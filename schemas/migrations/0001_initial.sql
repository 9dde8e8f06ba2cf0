-- Grant's schema: purchases, transactions, customers, ownership, entitlements, consumables, the
-- notifications log, the change history and the outbox. Every key includes the environment
-- (Production, Sandbox, …): transaction ids are unique only within one, and Sandbox data must never
-- grant Production access. Times are timestamptz; Apple's money stays bigint milliunits.

-- Milliseconds since 1970 as a JSON number (Apple's unit, and how grant sends batches) → timestamptz.
CREATE FUNCTION ms_to_timestamptz(ms jsonb) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN ms IS NULL OR jsonb_typeof(ms) <> 'number' THEN NULL
                ELSE to_timestamp((ms #>> '{}')::float8 / 1000) END
$$;

-- Customers, keyed by the appAccountToken the app set at purchase.
CREATE TABLE customers (
    environment       text        NOT NULL,
    customer_id       uuid        NOT NULL,
    external_user_id  text,
    -- The next outbox sequence number of this customer (gap-free, allocated in grant's transaction).
    next_seq          bigint      NOT NULL DEFAULT 1,
    PRIMARY KEY (environment, customer_id)
);
CREATE INDEX customers_external_user ON customers (external_user_id) WHERE external_user_id IS NOT NULL;

-- Every transaction Apple gave (notification, history, status), newest signed copy kept.
CREATE TABLE transactions (
    environment              text        NOT NULL,
    transaction_id           text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    web_order_line_item_id   text,
    bundle_id                text,
    product_id               text,
    subscription_group_id    text,
    product_type             text,
    purchase_date            timestamptz,
    original_purchase_date   timestamptz,
    expires_date             timestamptz,
    quantity                 integer,
    app_account_token        uuid,
    in_app_ownership_type    text,
    signed_date              timestamptz,
    revocation_date          timestamptz,
    revocation_reason        smallint,
    revocation_type          text,
    revocation_percentage    integer,
    is_upgraded              boolean,
    offer_type               smallint,
    offer_identifier         text,
    offer_discount_type      text,
    offer_period             text,
    storefront               text,
    storefront_id            text,
    transaction_reason       text,
    currency                 text,
    price_milliunits         bigint,
    app_transaction_id       text,
    billing_plan_type        text,
    -- The whole decoded transaction (every field, including ones added after this migration).
    payload                  jsonb       NOT NULL,
    -- The transaction's JWS when the record carried it on its own (app uploads).
    raw_jws                  text,
    PRIMARY KEY (environment, transaction_id)
);
CREATE INDEX transactions_by_original ON transactions (environment, original_transaction_id, purchase_date DESC);
CREATE INDEX transactions_revoked ON transactions (environment, original_transaction_id) WHERE revocation_date IS NOT NULL;

-- One row per purchase (environment, originalTransactionId) of every product type but consumables:
-- for auto-renewable subscriptions the current renewal view, for one-time purchases ownership and
-- revocation. `state` is grant's full decision state; the other columns are its queryable projection.
CREATE TABLE subscriptions (
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    product_type             text        NOT NULL,
    product_id               text        NOT NULL,
    auto_renew_product_id    text,
    auto_renew_enabled       boolean,
    lifecycle                text        NOT NULL
        CHECK (lifecycle IN ('active', 'grace_period', 'billing_retry', 'expired', 'revoked')),
    apple_status             smallint,
    purchase_date            timestamptz,
    expires_at               timestamptz,
    grace_period_expires_at  timestamptz,
    is_in_billing_retry      boolean     NOT NULL,
    price_increase_status    smallint,
    expiration_intent        smallint,
    revoked_at               timestamptz,
    revocation_reason        smallint,
    latest_transaction_id    text,
    subscription_group_id    text,
    owner_customer_id        uuid,
    -- The ordering guard: the moment the applied facts describe (API fetch time, or the transaction's
    -- signedDate when it is its own truth) and the event that carried them.
    state_as_of              timestamptz NOT NULL,
    state_event_key          text        NOT NULL,
    last_signed_date         timestamptz,
    state                    jsonb       NOT NULL,
    PRIMARY KEY (environment, original_transaction_id)
);
CREATE INDEX subscriptions_owner ON subscriptions (environment, owner_customer_id);
CREATE INDEX subscriptions_expiring ON subscriptions (lifecycle, expires_at);

-- Every customer that claimed a purchase; one is the owner, the others are refused (or superseded
-- when transfers are allowed).
CREATE TABLE ownership_claims (
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    customer_id              uuid        NOT NULL,
    first_claimed_at         timestamptz NOT NULL,
    verified                 boolean     NOT NULL,
    status                   text        NOT NULL CHECK (status IN ('owner', 'refused', 'superseded')),
    cause_event_key          text        NOT NULL,
    PRIMARY KEY (environment, original_transaction_id, customer_id)
);

-- Product → entitlement mapping (several products can grant one entitlement), synced from
-- ENTITLEMENTS_PRODUCTS_FILE when grant starts. An unmapped product grants the entitlement named
-- by its product ID.
CREATE TABLE product_entitlements (
    product_id       text    NOT NULL,
    entitlement_key  text    NOT NULL,
    duration_days    integer,
    PRIMARY KEY (product_id, entitlement_key)
);

-- What each customer is entitled to, per source purchase. Entitled now: active and
-- (active_until IS NULL OR active_until > now()); see current_entitlements.
CREATE TABLE entitlements (
    environment      text        NOT NULL,
    customer_id      uuid        NOT NULL,
    entitlement_key  text        NOT NULL,
    source_id        text        NOT NULL,  -- originalTransactionId
    source_kind      text        NOT NULL CHECK (source_kind IN ('auto_renewable', 'non_consumable', 'non_renewing')),
    product_id       text        NOT NULL,
    active           boolean     NOT NULL,
    active_from      timestamptz,
    active_until     timestamptz,           -- NULL: no end (non-consumables)
    reason           text        NOT NULL,
    PRIMARY KEY (environment, customer_id, entitlement_key, source_id)
);
CREATE INDEX entitlements_by_source ON entitlements (environment, source_id);
CREATE INDEX entitlements_active ON entitlements (environment, customer_id) WHERE active;

-- Consumables: granted from their own transaction, revoked when refunded.
CREATE TABLE consumable_grants (
    environment        text        NOT NULL,
    transaction_id     text        NOT NULL,
    customer_id        uuid,
    product_id         text        NOT NULL,
    entitlement_keys   text[]      NOT NULL,
    quantity           integer     NOT NULL,
    purchased_at       timestamptz,
    revoked_at         timestamptz,
    revocation_reason  smallint,
    state_as_of        timestamptz NOT NULL,
    state_event_key    text        NOT NULL,
    PRIMARY KEY (environment, transaction_id)
);
CREATE INDEX consumable_grants_customer ON consumable_grants (environment, customer_id);

-- Every event grant saw: the dedupe key and the audit trail.
CREATE TABLE notifications (
    environment              text        NOT NULL,
    event_key                text        NOT NULL,  -- notification:<uuid> | transaction:<id>:<signedDate ms>
    notification_uuid        text,
    kind                     text        NOT NULL,  -- notification | transaction
    source                   text        NOT NULL,
    notification_type        text        NOT NULL,  -- Apple's raw type, or APP_UPLOAD
    subtype                  text,
    original_transaction_id  text,
    transaction_id           text,
    signed_date              timestamptz,
    received_at              timestamptz NOT NULL,  -- when verify accepted it
    processed_at             timestamptz NOT NULL DEFAULT now(),
    outcome                  text        NOT NULL CHECK (outcome IN ('applied', 'stale', 'recorded')),
    note                     text,
    PRIMARY KEY (environment, event_key)
);
CREATE INDEX notifications_by_purchase ON notifications (environment, original_transaction_id, signed_date);
CREATE UNIQUE INDEX notifications_uuid ON notifications (environment, notification_uuid) WHERE notification_uuid IS NOT NULL;

-- Refund consumption requests to answer within 12 hours.
CREATE TABLE consumption_requests (
    environment        text        NOT NULL,
    notification_uuid  text        NOT NULL,
    transaction_id     text,
    reason             text,
    signed_date        timestamptz,
    deadline           timestamptz,
    PRIMARY KEY (environment, notification_uuid)
);

-- Append-only history of entitlement changes with their cause.
CREATE TABLE entitlement_changes (
    change_id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment        text        NOT NULL,
    customer_id        uuid        NOT NULL,
    seq                bigint      NOT NULL,
    entitlement_key    text        NOT NULL,
    source_id          text        NOT NULL,
    product_id         text        NOT NULL,
    change             text        NOT NULL,
    active             boolean     NOT NULL,
    active_until       timestamptz,
    reason             text        NOT NULL,
    quantity           integer,
    cause_event_key    text        NOT NULL,
    cause_type         text        NOT NULL,
    cause_subtype      text,
    cause_lookup       text        NOT NULL,
    cause_as_of        timestamptz NOT NULL,
    cause_signed_date  timestamptz,
    recorded_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (environment, customer_id, seq)
);
CREATE INDEX entitlement_changes_by_customer ON entitlement_changes (environment, customer_id, entitlement_key, seq);

-- Transactional outbox of change events, published to entitlements.changes.v1 keyed by customer.
CREATE TABLE outbox (
    environment   text        NOT NULL,
    customer_id   uuid        NOT NULL,
    seq           bigint      NOT NULL,
    body          jsonb       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    published_at  timestamptz,
    PRIMARY KEY (environment, customer_id, seq)
);
CREATE INDEX outbox_unpublished ON outbox (environment, customer_id, seq) WHERE published_at IS NULL;

-- "What is this customer entitled to now": one row per entitlement, with the latest end.
CREATE VIEW current_entitlements AS
SELECT environment,
       customer_id,
       entitlement_key,
       bool_or(active_until IS NULL) AS lifetime,
       max(active_until)             AS active_until,
       array_agg(source_id ORDER BY source_id) AS source_ids
FROM entitlements
WHERE active AND (active_until IS NULL OR active_until > now())
GROUP BY environment, customer_id, entitlement_key;

-- Consumables delivered and not refunded, per customer and entitlement key.
CREATE VIEW consumable_balances AS
SELECT environment, customer_id, key AS entitlement_key, sum(quantity)::bigint AS quantity
FROM consumable_grants, unnest(entitlement_keys) AS key
WHERE customer_id IS NOT NULL AND revoked_at IS NULL
GROUP BY environment, customer_id, key;
