-- GRANT_RESCINDED_CONSENT=suspend: each batch asks which of its customers had a RESCIND_CONSENT
-- attributed to them (consent_rescinds.customer_id), and their access stays suspended.
CREATE INDEX consent_rescinds_customer ON consent_rescinds (customer_id) WHERE customer_id IS NOT NULL;
