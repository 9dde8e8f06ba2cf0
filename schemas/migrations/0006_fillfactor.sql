-- Room on each page for the new version of a row grant updates, so the update stays on its page and
-- touches no index ("HOT") when no indexed column changed: a customer's next_seq moves with every
-- change, a transaction's newest signed copy replaces the last, an entitlement's end date moves on
-- renewal. Applies to pages written from now on.
ALTER TABLE customers SET (fillfactor = 70);
ALTER TABLE transactions SET (fillfactor = 80);
ALTER TABLE entitlements SET (fillfactor = 80);
ALTER TABLE subscriptions SET (fillfactor = 80);
