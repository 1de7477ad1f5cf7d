-- An execute claims an APPROVED request before it starts the request's run: claim_token names
-- the claimer, claim_until is when a claimer that went away loses it. The run's insert marks
-- the request EXECUTED under the claim, in the same transaction.
-- reopen_reason says why a request went back to PENDING_APPROVAL: judged again when it was
-- approved or executed, it asked for more than it was judged for.
ALTER TABLE replay_requests
    ADD COLUMN claim_token   text,
    ADD COLUMN claim_until   timestamptz,
    ADD COLUMN reopen_reason text,
    ADD CONSTRAINT replay_requests_claim_whole CHECK ((claim_token IS NULL) = (claim_until IS NULL));
