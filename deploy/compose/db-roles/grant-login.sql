-- Gives grant its own login, appstore_grant_login, a member of appstore_grant: rows of grant's
-- tables only; no DDL, TRUNCATE, DROP or schema_migrations writes (migration 0021; the policy is in
-- docs/migrations.md). Run by the compose service db-roles as the owner after the migrations made
-- the role; idempotent, and sets the password from the secret postgres-grant-password each time.
\set ON_ERROR_STOP on
\set password `cat /run/secrets/postgres-grant-password`
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'appstore_grant_login') AS missing \gset
\if :missing
CREATE ROLE appstore_grant_login LOGIN;
\endif
ALTER ROLE appstore_grant_login LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'password';
GRANT appstore_grant TO appstore_grant_login;
