package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestSkipAndFailNeverMoveSettledTargets checks that Skip and Fail are refused, with a coded
// error naming the target, step and state, on a target that is CONFIRMED, AMBIGUOUS_EFFECT or
// IN_FLIGHT, and leave its row and the counters as they were; on an unsettled target they
// still record what they say.
func TestSkipAndFailNeverMoveSettledTargets(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	var mu sync.Mutex
	phase := 1
	errs := map[string]error{}
	item := func(target string) runner.Item { return runner.Item{Target: target, Step: "pay", External: true} }
	job := runner.NewJob(runner.JobInfo{Name: "settled", Version: "1", Retry: runner.RetryPolicy{MaxAttempts: 1}},
		func(ctx context.Context, run *runner.Run) error {
			mu.Lock()
			p := phase
			mu.Unlock()
			if p == 1 {
				for _, target := range []string{"done", "doubt", "weather"} {
					err := run.Process(ctx, item(target), func(context.Context, *runner.Attempt) error {
						switch target {
						case "doubt":
							return runner.Ambiguous(errors.New("timed out after sending"))
						case "weather":
							return runner.Transient(errors.New("503"))
						}
						return nil
					})
					if err != nil {
						return err
					}
				}
				return nil
			}
			record := func(what string, err error) {
				mu.Lock()
				errs[what] = err
				mu.Unlock()
			}
			record("skip done", run.Skip(ctx, item("done"), "nothing to do"))
			record("fail done", run.Fail(ctx, item("done"), runner.Rejected(errors.New("bad account"))))
			record("skip doubt", run.Skip(ctx, item("doubt"), "nothing to do"))
			record("fail doubt", run.Fail(ctx, item("doubt"), errors.New("gave up")))
			record("skip flight", run.Skip(ctx, item("flight"), "nothing to do"))
			record("fail flight", run.Fail(ctx, item("flight"), errors.New("gave up")))
			record("fail weather", run.Fail(ctx, item("weather"), runner.Rejected(errors.New("closed account"))))
			return nil
		})
	r := b.runner(nil, job)
	first := b.succeed(r, runner.StartParams{Job: "settled"})
	// A dead worker's intent for "flight", counters included.
	key := runner.IdempotencyKey("settled", first.Generation, "flight", "pay")
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, external, run_id)
		VALUES ('settled', $1, 'flight', 'pay', 'IN_FLIGHT', 1, $2, true, $3)`, first.Generation, key, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n) VALUES ('settled', $1, 0, 'IN_FLIGHT', 1)
		ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + 1`, first.Generation); err != nil {
		t.Fatal(err)
	}
	before := map[string]*entry{}
	for _, target := range []string{"done", "doubt", "flight"} {
		before[target] = b.mustEntry("settled", target)
	}
	mu.Lock()
	phase = 2
	mu.Unlock()
	second := b.succeed(r, runner.StartParams{Job: "settled", Mode: bt.ModeResume})

	for what, state := range map[string]bt.LedgerState{"skip done": bt.LedgerConfirmed, "fail done": bt.LedgerConfirmed,
		"skip doubt": bt.LedgerAmbiguous, "fail doubt": bt.LedgerAmbiguous, "skip flight": bt.LedgerInFlight, "fail flight": bt.LedgerInFlight} {
		err := errs[what]
		target := strings.Fields(what)[1]
		if code(err) != bt.CodeLedgerTransition {
			t.Errorf("%s returned %v, want %s", what, err, bt.CodeLedgerTransition)
			continue
		}
		for _, part := range []string{target, "pay", string(state)} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s: message %q does not name %q", what, err.Error(), part)
			}
		}
	}
	for target, was := range before {
		if now := b.mustEntry("settled", target); entryString(now) != entryString(was) {
			t.Errorf("%s changed by a refused write: %s, was %s", target, entryString(now), entryString(was))
		}
	}
	if err := errs["fail weather"]; err != nil {
		t.Fatalf("Fail on a TRANSIENT target: %v", err)
	}
	b.wantStates("settled", map[string]bt.LedgerState{"weather": bt.LedgerValidationRejected})
	b.wantCounters(second, counters{processed: 1, failed: 1})
	b.checkCounts(r, "settled", second.Generation, second.ID)
}

// entryString shows every field of a ledger row, pointers by what they point at.
func entryString(e *entry) string {
	return fmt.Sprintf("%d/%d %s attempt %d key %s input %s changed %v ext %v effect %s evidence %s error %s same %d run %d",
		e.ID, e.Generation, e.State, e.Attempt, e.Key, e.InputHash, e.InputChanged, e.External, deref(e.EffectRef),
		deref(e.EvidenceRef), deref(e.LastError), e.SameErrorCount, e.RunID)
}
