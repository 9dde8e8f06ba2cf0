-- The rows of one batch as one jsonb array, as the previous release's statements read them. Only the
-- jsonb overloads of grant_load and grant_write, kept while its replicas may call them, still use it;
-- the contract migration that drops them drops this too. The current statements bind typed arrays.
--
-- The planner estimates jsonb_array_elements at 100 rows whatever its argument, so against tables of
-- a few thousand rows it chose to hash a sequential scan of the whole table for every batch, even a
-- batch of one record. This function carries an estimate of one row, so each row is found through
-- its key's index. PL/pgSQL, because a SQL function would be inlined and its estimate lost.
CREATE OR REPLACE FUNCTION batch_rows(batch jsonb) RETURNS SETOF jsonb
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE ROWS 1
    SET search_path = public, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT value FROM jsonb_array_elements(batch);
END
$$;
