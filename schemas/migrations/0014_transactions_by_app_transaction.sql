-- appTransactionId → customer: the transactions Apple signed with an app transaction, so a
-- notification that names only the app transaction (RESCIND_CONSENT's appData) finds the customer
-- owning the newest purchase that carries it.
CREATE INDEX transactions_by_app_transaction ON transactions (app_transaction_id, environment) WHERE app_transaction_id IS NOT NULL;
