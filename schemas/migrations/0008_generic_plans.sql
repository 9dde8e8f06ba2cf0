-- grant_load's and grant_write's statements were planned afresh on every call
-- (plan_cache_mode = force_custom_plan, migration 0004): at 100 notifications/s that planning was half
-- of Postgres's CPU. It was there because a plan made while a table was empty could look rows up through
-- a secondary index that shares only the environment with the key (notifications_by_purchase for a
-- dedupe lookup: a scan of the whole environment per event), and keep that plan as the table grew.
--
-- Every secondary index now leads with the column that names the row (the purchase, the customer, the
-- source) and keeps the environment second, so none of them can serve a lookup by key: the key's own
-- index is the only one that narrows past the environment, on an empty table as on a large one. The
-- lookups that use these indexes (the operator reports, the customer lookup, the sweeps) name that
-- column, and some of them name no environment at all, which the old order could not serve.
--
-- Then both functions plan each statement once per connection (force_generic_plan), and Postgres plans
-- again whenever a table's statistics change (ANALYZE). Postgres builds each index again here, holding
-- writes to its table meanwhile: on a large database, run this migration in a quiet moment.
DROP INDEX transactions_by_original;
CREATE INDEX transactions_by_original ON transactions (original_transaction_id, environment, purchase_date DESC);
DROP INDEX transactions_revoked;
CREATE INDEX transactions_revoked ON transactions (original_transaction_id, environment) WHERE revocation_date IS NOT NULL;
DROP INDEX subscriptions_owner;
CREATE INDEX subscriptions_owner ON subscriptions (owner_customer_id, environment);
DROP INDEX entitlements_by_source;
CREATE INDEX entitlements_by_source ON entitlements (source_id, environment);
DROP INDEX entitlements_active;
CREATE INDEX entitlements_active ON entitlements (customer_id, environment) WHERE active;
DROP INDEX consumable_grants_customer;
CREATE INDEX consumable_grants_customer ON consumable_grants (customer_id, environment);
DROP INDEX notifications_by_purchase;
CREATE INDEX notifications_by_purchase ON notifications (original_transaction_id, environment, signed_date);
DROP INDEX notifications_uuid;
CREATE UNIQUE INDEX notifications_uuid ON notifications (notification_uuid, environment) WHERE notification_uuid IS NOT NULL;

ALTER FUNCTION grant_load(jsonb) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION grant_write(jsonb) SET plan_cache_mode = force_generic_plan;
