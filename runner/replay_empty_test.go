package runner_test

import (
	"context"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// A replay of a generation without ledger rows is blocked, at preflight and at request: it
// would call every target anew. No target is called.
func TestReplayOfEmptiedGenerationBlocked(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job := newLedgerJob("emptied", "a", "b", "c")
	r := b.runner(nil, job)
	run := b.succeed(r, runner.StartParams{Job: "emptied"})
	// The generation is emptied as retention empties one: rows and counters together.
	for _, sql := range []string{`DELETE FROM job_ledger WHERE job_name = 'emptied'`, `DELETE FROM job_ledger_counts WHERE job_name = 'emptied'`} {
		if _, err := b.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	for _, scope := range []bt.ReplayScope{bt.ScopeFull, bt.ScopeFailed} {
		pf, err := r.Replays().Preflight(ctx, run.ID, scope)
		if err != nil {
			t.Fatal(err)
		}
		if !pf.Blocked || !hasCheck(pf, "ledger rows", bt.VerdictBlock) {
			t.Fatalf("%s preflight of an emptied generation: blocked %v, checks %+v; want blocked by \"ledger rows\"", scope, pf.Blocked, pf.Checks)
		}
	}
	req, err := r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeFull, Reason: "redo", Actor: "ops"})
	if code(err) != bt.CodeReplayBlocked {
		t.Fatalf("FULL replay of an emptied generation: %v (request %+v), want REPLAY_BLOCKED", err, req)
	}
	if req != nil && req.ReplayRunID != nil {
		b.finish(r, *req.ReplayRunID)
	}
	for _, target := range []string{"a", "b", "c"} {
		if n := job.callsOf(target); n != 1 {
			t.Errorf("target %s called %d times, want once (the first run only)", target, n)
		}
	}
}
