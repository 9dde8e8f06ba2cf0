-- The refund sweep (appstorectl refunds): per customer and app, the `revision` Get Refund History
-- answered last, so the next sweep asks Apple only for refunds made since; and the transaction it
-- asks with (any of the customer's purchases names the customer at Apple).
CREATE TABLE refund_sweeps (
    environment     text        NOT NULL,
    bundle_id       text        NOT NULL,
    customer_id     uuid        NOT NULL,
    transaction_id  text        NOT NULL,
    revision        text        NOT NULL,
    refunds_seen    integer     NOT NULL DEFAULT 0,
    swept_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (environment, bundle_id, customer_id)
);
