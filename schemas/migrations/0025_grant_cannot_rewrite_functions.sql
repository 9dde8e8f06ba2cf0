-- appstore_grant cannot rewrite which function files were applied, as it cannot rewrite
-- schema_migrations (0021). The migrator now creates schema_functions before the migrations run, so
-- 0021's grant on all tables reached it on a new database; a grant's login that could rewrite a
-- checksum there could make the next start skip a changed function file.
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON schema_functions FROM appstore_grant;
