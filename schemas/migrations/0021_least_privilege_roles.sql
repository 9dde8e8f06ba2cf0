-- Least privilege in the database (issue 28, docs/migrations.md "Roles"). The role that runs the
-- migrations owns every object. Two group roles, created once per cluster, say what the others may:
--   appstore_grant    rows only (SELECT, INSERT, UPDATE, DELETE; sequences; functions): grant, the
--                     consumption responder and the jobs log in as a member. No DDL, no TRUNCATE, no
--                     DROP, and it cannot rewrite which migrations were applied.
--   appstore_support  read only: support queries and dashboards.
-- Operators make their login roles members (CREATE ROLE grant_login LOGIN IN ROLE appstore_grant).
-- Creating a role needs CREATEROLE; where the migrating role lacks it (some managed databases), an
-- administrator creates the two roles first and this migration only grants.
DO $roles$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['appstore_grant', 'appstore_support'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = name) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', name);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;  -- another database of the cluster made it meanwhile
            END;
        END IF;
    END LOOP;
END
$roles$;

GRANT USAGE ON SCHEMA public TO appstore_grant, appstore_support;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO appstore_grant;
REVOKE INSERT, UPDATE, DELETE ON schema_migrations FROM appstore_grant;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO appstore_grant;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO appstore_grant;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO appstore_support;

-- What later migrations create gets the same.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO appstore_grant;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO appstore_grant;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO appstore_grant;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO appstore_support;

-- Every PL/pgSQL function resolves names in this schema only, whoever calls it with whatever
-- search_path (a caller's schema earlier in the path cannot shadow a table). SQL-language helpers
-- stay inlinable and are left as they are.
DO $pin$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        JOIN pg_language l ON l.oid = p.prolang
        WHERE n.nspname = 'public' AND l.lanname = 'plpgsql' AND p.prokind = 'f'
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = public, pg_temp', f);
    END LOOP;
END
$pin$;
