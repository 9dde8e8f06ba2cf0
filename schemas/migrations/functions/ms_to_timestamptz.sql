-- Milliseconds since 1970 as a JSON number (Apple's unit, and how grant sends batches) → timestamptz.
-- SQL, so the planner inlines it (no search_path pin, which would stop the inlining).
CREATE OR REPLACE FUNCTION ms_to_timestamptz(ms jsonb) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN ms IS NULL OR jsonb_typeof(ms) <> 'number' THEN NULL
                ELSE to_timestamp((ms #>> '{}')::float8 / 1000) END
$$;
