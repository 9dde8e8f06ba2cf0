-- Who asked Apple to stamp a customer's appAccountToken on a purchase (Set App Account Token), when,
-- and what Apple answered: `appstorectl bind` writes one row per request. Apple's own data then names
-- the customer, and grant moves the purchase by its ownership rule (the newest Apple-signed token
-- wins); this table is the record of why Apple's token changed.
CREATE TABLE token_bindings (
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    customer_id              uuid        NOT NULL,
    requested_by             text        NOT NULL,
    requested_at             timestamptz NOT NULL DEFAULT now(),
    outcome                  text        NOT NULL CHECK (outcome IN ('set', 'refused')),
    apple_error              text,
    PRIMARY KEY (environment, original_transaction_id, requested_at, customer_id)
);
CREATE INDEX token_bindings_by_customer ON token_bindings (environment, customer_id);
