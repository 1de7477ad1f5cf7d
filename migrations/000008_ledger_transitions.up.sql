-- A fenced item write that would move a ledger row in a way the transition table forbids
-- (runner/postgres/transitions.go: out of CONFIRMED, AMBIGUOUS_EFFECT or IN_FLIGHT by a skip,
-- a failure, a second intent, ...) calls this: the whole statement fails, nothing of it lands,
-- and the runner returns LEDGER_TRANSITION_REFUSED to the job. The row's state travels in
-- DETAIL so the runner can say how the target is settled instead. VOLATILE, so the planner
-- never evaluates it ahead of the check.
CREATE FUNCTION baton_ledger_refused(target text, step text, state text, kind text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION '% write refused: target % step % is %', kind, quote_literal(target), quote_literal(step), state
        USING ERRCODE = 'BT422', DETAIL = state;
END
$$;
