-- Who asked Apple to extend a subscription's renewal date (appstorectl extend), when, why and what
-- Apple answered: one row per request, by Apple's request identifier (a repeat of the same
-- identifier is Apple's idempotent answer, recorded once).
CREATE TABLE renewal_extensions (
    request_identifier       text        NOT NULL PRIMARY KEY,
    environment              text        NOT NULL,
    bundle_id                text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    extend_by_days           integer     NOT NULL,
    reason_code              smallint    NOT NULL,
    requested_by             text        NOT NULL,
    requested_at             timestamptz NOT NULL DEFAULT now(),
    outcome                  text        NOT NULL CHECK (outcome IN ('extended', 'refused')),
    effective_date           timestamptz,
    apple_error              text
);
CREATE INDEX renewal_extensions_by_purchase ON renewal_extensions (environment, original_transaction_id);
