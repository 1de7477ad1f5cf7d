package demo

import (
	"context"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestFlakyLeavesEveryFailureClass(t *testing.T) {
	b := setup(t)
	job := newFlakyJob(FastConfig().Flaky) // records 1..40
	r := b.runner(job)
	id := b.start(r, runner.StartParams{Job: FlakyJobName})
	got := b.waitStatus(r, id, bt.StatusSucceeded)

	want := map[string]int{
		"CONFIRMED":           32,
		"VALIDATION_REJECTED": 4, // 3, 13, 23, 33
		"CONFLICT":            2, // 9, 25
		"POLICY_BLOCKED":      1, // 20
		"BUG_SUSPECTED":       1, // 17
	}
	states := b.ledgerStates(FlakyJobName)
	if len(states) != len(want) {
		t.Fatalf("ledger states %v, want %v", states, want)
	}
	for s, n := range want {
		if states[s] != n {
			t.Fatalf("ledger states %v, want %v", states, want)
		}
	}
	if got.Succeeded != 32 || got.Failed != 8 || got.Processed != 40 {
		t.Fatalf("run counters succeeded %d failed %d processed %d, want 32, 8, 40", got.Succeeded, got.Failed, got.Processed)
	}
	// The same unclassified error three times is a bug, not bad luck.
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE target_key = 'rec:0017' AND state = 'BUG_SUSPECTED' AND attempt = 3 AND same_error_count = 3`); n != 1 {
		t.Fatalf("rec:0017 is not BUG_SUSPECTED after 3 attempts of the same error")
	}
	// Passing failures were retried and succeeded.
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE target_key IN ('rec:0007', 'rec:0014', 'rec:0021', 'rec:0028', 'rec:0035')
		AND state = 'CONFIRMED' AND attempt = 2`); n != 5 {
		t.Fatalf("%d of the 5 transient records confirmed on their second attempt, want 5", n)
	}
	errs, err := r.Runs().Errors(context.Background(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]int{}
	for _, e := range errs {
		classes[e.FailureClass]++
	}
	if len(errs) != 8 || classes["VALIDATION_REJECTED"] != 4 || classes["CONFLICT"] != 2 || classes["POLICY_BLOCKED"] != 1 || classes["BUG_SUSPECTED"] != 1 {
		t.Fatalf("error rows by class %v (%d rows), want 4 rejected, 2 conflicts, 1 policy, 1 bug", classes, len(errs))
	}
}
