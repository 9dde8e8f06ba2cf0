-- Who asked Apple to extend the renewal date of every active subscriber of a product (appstorectl
-- extend-all), in which storefronts, when, why and what Apple answered; and what Apple reported when
-- it was done. One row per request, by Apple's request identifier. appstorectl writes the row before
-- it asks Apple (apple_outcome 'pending') and then records the answer ('accepted', or 'refused' with
-- apple_error), so a report that arrives quickly always finds its request.
--
-- grant fills in the outcome from Apple's notifications, in the batch's transaction:
-- RENEWAL_EXTENSION/SUMMARY names its request (summary.requestIdentifier) and sets the counts and
-- complete_date (the summary's signedDate), once. RENEWAL_EXTENSION/FAILURE names no request, only the
-- subscription Apple could not extend: it is a row of mass_renewal_extension_failures, matched to the
-- newest request of its environment, bundle and product that Apple did not refuse and that was made
-- before Apple signed the failure (a minute's leeway for clocks; Apple runs a product's mass extensions
-- one after another, and the pipeline may bring a failure after its summary); request_identifier stays
-- empty when there is none (a request made elsewhere, e.g. in App Store Connect).
CREATE TABLE mass_renewal_extensions (
    environment                text        NOT NULL,
    request_identifier         text        NOT NULL,
    bundle_id                  text        NOT NULL,
    product_id                 text        NOT NULL,
    storefront_country_codes   text[],
    extend_by_days             integer     NOT NULL,
    reason_code                smallint    NOT NULL,
    requested_by               text        NOT NULL,
    requested_at               timestamptz NOT NULL DEFAULT now(),
    apple_outcome              text        NOT NULL DEFAULT 'pending' CHECK (apple_outcome IN ('pending', 'accepted', 'refused')),
    apple_error                text,
    succeeded_count            bigint,
    failed_count               bigint,
    complete_date              timestamptz,
    summary_notification_uuid  text,
    PRIMARY KEY (environment, request_identifier)
);
CREATE INDEX mass_renewal_extensions_by_product ON mass_renewal_extensions (environment, bundle_id, product_id, requested_at);

-- One row per RENEWAL_EXTENSION/FAILURE (a redelivery of the same notification is recorded once).
CREATE TABLE mass_renewal_extension_failures (
    environment              text        NOT NULL,
    notification_uuid        text        NOT NULL,
    request_identifier       text,
    bundle_id                text        NOT NULL,
    product_id               text,
    original_transaction_id  text        NOT NULL,
    reported_at              timestamptz NOT NULL,
    PRIMARY KEY (environment, notification_uuid)
);
CREATE INDEX mass_renewal_extension_failures_by_request ON mass_renewal_extension_failures (environment, request_identifier);
