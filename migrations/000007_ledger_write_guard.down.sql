DROP FUNCTION baton_ledger_changed(bigint, bigint);
