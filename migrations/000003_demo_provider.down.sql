-- Version 3 creates nothing any more (see its up file), so rolling it back drops nothing. The
-- demo tables an older binary created here now belong to internal/demo's own migrations,
-- whose down file drops them; dropping them here would leave that chain's record claiming
-- tables that are gone.
SELECT 1;
