-- Answering Apple's CONSUMPTION_REQUEST notifications (Send Consumption Information, within 12 hours).
-- grant records each request; the consumption responder (in grant, when an app opts in) claims the
-- pending ones, sends what our records say, and keeps the outcome here for support and audit.
ALTER TABLE consumption_requests
    ADD COLUMN bundle_id                text,
    ADD COLUMN original_transaction_id  text,
    ADD COLUMN received_at              timestamptz NOT NULL DEFAULT now(),
    -- pending: to answer; sent: Apple accepted it (202); skipped: not answered on purpose (see note);
    -- expired: the deadline passed before an answer went out; failed: Apple refused it permanently.
    ADD COLUMN status                   text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'sent', 'skipped', 'expired', 'failed')),
    ADD COLUMN attempts                 integer     NOT NULL DEFAULT 0,
    -- When a responder may next take it (a claim pushes it out, so a crashed responder's claim lapses).
    ADD COLUMN next_attempt_at          timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN sent_at                  timestamptz,
    -- The body sent to Apple (ConsumptionRequest, v2).
    ADD COLUMN request_body             jsonb,
    ADD COLUMN delivery_status          text,
    ADD COLUMN refund_preference        text,
    ADD COLUMN last_error               text,
    ADD COLUMN note                     text;

CREATE INDEX consumption_requests_due ON consumption_requests (next_attempt_at) WHERE status = 'pending';

-- Webhook-to-entitlement latency: when ingest received each event (its `received-at` header) and
-- when grant wrote it (the clock at the write, not the transaction's start).
ALTER TABLE notifications ADD COLUMN ingested_at timestamptz;
ALTER TABLE notifications ALTER COLUMN processed_at SET DEFAULT clock_timestamp();
