-- The rows of one batch, as grant's statements read them (one jsonb array parameter per statement).
--
-- The planner estimates jsonb_array_elements at 100 rows whatever its argument, so against tables of
-- a few thousand rows it chose to hash a sequential scan of the whole table for every batch, even a
-- batch of one record: each small batch read every customer, entitlement and outbox row. This
-- function carries an estimate of one row (grant's batches are a handful of rows, often one), so each
-- row is found through its key's index. PL/pgSQL, because a SQL function would be inlined and its
-- estimate lost.
CREATE FUNCTION batch_rows(batch jsonb) RETURNS SETOF jsonb
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE ROWS 1
AS $$
BEGIN
    RETURN QUERY SELECT value FROM jsonb_array_elements(batch);
END
$$;
