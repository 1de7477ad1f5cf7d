-- A fenced item write that relies on what the runner knows of a row's state (it read or wrote
-- the row under its lease) updates the row only while it is still in that state, and calls this
-- when any row was not: the whole statement fails, nothing of it lands, and the runner makes the
-- write again as an upsert. VOLATILE, so the planner never evaluates it ahead of the check.
CREATE FUNCTION baton_ledger_changed(expected bigint, updated bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'ledger rows changed under the run: % of % updated', updated, expected
        USING ERRCODE = 'BT409';
END
$$;
