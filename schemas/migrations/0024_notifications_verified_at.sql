-- migrate: functions grant_write
-- notifications.received_at becomes verified_at: the column always held when verify accepted the
-- record (0001: "when verify accepted it"), while `ingested_at` holds when the pipeline took it in
-- (the `ingested-at` header, called `received-at` before). One name per moment: ingested, verified.
--
-- A rename in one step, which docs/migrations.md ("Expand, migrate, contract") allows only when
-- nothing of the previous release that keeps running during the update names the column:
-- - Writers: only grant_write, both overloads (the typed one the previous release calls, the jsonb
--   one kept for the release before it); no Swift code of the previous release writes the column.
--   The directive above carries functions/grant_write.sql (signatures unchanged, writes verified_at):
--   the migrator runs it in this transaction right after the rename and records its checksum, so no
--   call of a running replica ever sees the column under one name and the function under the other
--   (a call queued behind the rename's lock runs the new body), and the function pass after the
--   migrations finds it current. (Left to that pass alone, which runs in a later transaction, every
--   grant_write in between would fail with 42703.) grant_load and the other function files do not
--   name the column.
-- - Readers: in the previous release only `appstorectl customer` (CustomerReport's notification
--   list) reads `received_at`. An old appstorectl run against a migrated database fails with
--   `store.sql_42703` and changes nothing; the new release's reads `verified_at`. No function,
--   view, index, alert or dashboard names the column (deploy/monitoring and bench read ingested_at).
-- The rename changes only the catalogue (no rewrite); it waits for its ACCESS EXCLUSIVE lock at most
-- the migration lock timeout, and holds it for as long as this transaction defines grant_write's two overloads.
ALTER TABLE notifications RENAME COLUMN received_at TO verified_at;
COMMENT ON COLUMN notifications.verified_at IS 'when verify accepted the record';
COMMENT ON COLUMN notifications.ingested_at IS 'when the pipeline took the record in: its ingested-at header (received-at before)';
