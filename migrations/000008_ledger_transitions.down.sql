DROP FUNCTION baton_ledger_refused(text, text, text, text);
