-- The outbox keeps each change event as the bytes grant publishes: text written by grant's own
-- encoder (functions/grant_write.sql), no longer Postgres's rendering of a jsonb value (which
-- reorders the keys). External purchase tokens too, as the outbox round reads them beside it. Both
-- hold little (the outbox only what waits; tokens are rare), so the rewrite is short, and the lock
-- timeout bounds the wait for its lock. A replica of the previous release still writes jsonb, which
-- is assigned as its text, and still reads body::text: both releases run side by side.
ALTER TABLE outbox ALTER COLUMN body TYPE text;
ALTER TABLE external_purchase_tokens ALTER COLUMN body TYPE text;
