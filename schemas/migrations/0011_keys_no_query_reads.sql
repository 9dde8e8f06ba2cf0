-- Two keys every event paid for and no query reads (as migration 0009 did for
-- entitlement_changes_by_customer):
--
-- notifications_uuid made a notification's UUID unique per environment. The primary key already does:
-- a notification's event key is `notification:<notificationUUID>`, and an event of any other kind has
-- no notification UUID. Nothing looks notifications up by UUID. Every event wrote an entry to it.
--
-- entitlement_changes.change_id numbered the history across customers, from a sequence, with an index
-- of its own. Nothing reads it: a customer's history is read, published and checked by customer and
-- seq, which the table's unique key serves. Every change took a number and wrote an entry to that index.
-- The unique key (environment, customer_id, seq) is now the table's replica identity, as the primary
-- key was.
--
-- The previous release's grant never names change_id and looks nothing up through the UUID index (it
-- calls the same grant_write), so it keeps working during a rolling update. Dropping a column and an
-- index rewrites nothing.
DROP INDEX notifications_uuid;
ALTER TABLE entitlement_changes REPLICA IDENTITY USING INDEX entitlement_changes_environment_customer_id_seq_key;
ALTER TABLE entitlement_changes DROP COLUMN change_id;
