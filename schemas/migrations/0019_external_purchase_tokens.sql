-- Apple's EXTERNAL_PURCHASE_TOKEN (subtypes UNREPORTED, ACTIVE_TOKEN_REMINDER, CREATED) is about a token of the
-- External Purchase API: an identifier the developer reports to Apple, naming no customer and no
-- purchase of the App Store. grant publishes each one on entitlements.changes.v1 as change
-- external_purchase_token, keyed <environment>:external-purchase:<externalPurchaseId>, for the service
-- that reports external purchases. It has no customer, so no customer's seq: this table is its
-- outbox (the publisher reads it beside outbox, in the same round and under the same lock) and its
-- history (a published row keeps published_at). One row per notification (event_key).
CREATE TABLE external_purchase_tokens (
    environment           text        NOT NULL,
    event_key             text        NOT NULL,
    external_purchase_id  text        NOT NULL,
    subtype               text,
    -- The change event as published.
    body                  jsonb       NOT NULL,
    recorded_at           timestamptz NOT NULL DEFAULT now(),
    published_at          timestamptz,
    PRIMARY KEY (environment, event_key)
);

-- What each outbox round reads: the tokens not published yet, oldest first.
CREATE INDEX external_purchase_tokens_unpublished ON external_purchase_tokens (recorded_at) WHERE published_at IS NULL;
