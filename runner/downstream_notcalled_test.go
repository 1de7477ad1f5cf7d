package runner_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// turnJob calls downstream ds once per target of targets, in one batch with every call in
// flight at once; call is each call.
func turnJob(name, ds string, lim bt.DownstreamLimits, targets []string, call func(ctx context.Context, item runner.Item) error) runner.Job {
	info := runner.JobInfo{Name: name, Lease: 2 * time.Second, Version: "1", StopConditions: []runner.StopCondition{},
		AutoResume:  &runner.AutoResumePolicy{Enabled: false, MaxAttempts: 1},
		Retry:       runner.RetryPolicy{MaxAttempts: 1, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond},
		Downstreams: []runner.Downstream{{Name: ds, Defaults: lim}}}
	return runner.NewJob(info, func(ctx context.Context, run *runner.Run) error {
		items := make([]runner.Item, len(targets))
		for i, t := range targets {
			items[i] = runner.Item{Target: t, External: true, Downstream: ds}
		}
		return run.ProcessBatch(ctx, items, len(items), func(ctx context.Context, item runner.Item, _ *runner.Attempt) error {
			return call(ctx, item)
		})
	})
}

// ledgerState returns target's state in job's ledger, "" when it has no row.
func (b *bundle) ledgerState(job, target string) (state, lastError string) {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT state, COALESCE(last_error, '') FROM job_ledger WHERE job_name = $1 AND target_key = $2`, job, target)
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&state, &lastError); err != nil {
			b.T.Fatal(err)
		}
	}
	return state, lastError
}

// An Acquire that fails and does not clear ends the item after a bounded number of rounds,
// TRANSIENT and not called, and the run ends: no call is made, and nothing loops for ever.
func TestDownstreamAcquireFailureEndsItemNotCalled(t *testing.T) {
	b := setup(t)
	var calls atomic.Int32
	job := turnJob("turn-broken", "broken", bt.DownstreamLimits{Concurrency: 4}, []string{"x"}, func(ctx context.Context, item runner.Item) error {
		calls.Add(1)
		return nil
	})
	r := b.runner(nil, job)
	var asked atomic.Int32
	r.FailDownstreamAcquire(func(string) error { asked.Add(1); return errors.New("the limits cannot be read") })
	id := mustStart(t, r, runner.StartParams{Job: "turn-broken"})
	got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled)
	if calls.Load() != 0 {
		t.Fatalf("%d calls made without a turn", calls.Load())
	}
	if got.Processed != 1 || got.Failed != 1 {
		t.Errorf("run %s: %d processed, %d failed; want the one item processed, failed", got.Status, got.Processed, got.Failed)
	}
	state, lastError := b.ledgerState("turn-broken", "x")
	if state != string(bt.LedgerTransient) || !strings.Contains(lastError, "not called") {
		t.Errorf("x is %q (%q); want TRANSIENT, not called", state, lastError)
	}
	if n := asked.Load(); n < 2 {
		t.Errorf("Acquire asked %d times; want a few rounds before the item ends", n)
	}
}

// In a replay, an item whose downstream gives it no turn keeps its rejected class: no call
// was made to change it.
func TestDownstreamNotCalledKeepsRejectedClassInReplay(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	reject := true
	job := turnJob("turn-replay", "svc", bt.DownstreamLimits{Concurrency: 4}, []string{"x"}, func(ctx context.Context, item runner.Item) error {
		mu.Lock()
		defer mu.Unlock()
		if reject {
			return runner.Rejected(errors.New("bad account"))
		}
		return nil
	})
	r := b.runner(nil, job)
	first := b.finish(r, mustStart(t, r, runner.StartParams{Job: "turn-replay"}))
	if state, _ := b.ledgerState("turn-replay", "x"); state != string(bt.LedgerValidationRejected) {
		t.Fatalf("x is %q after the first run (%s); want VALIDATION_REJECTED", state, first.Status)
	}
	mu.Lock()
	reject = false
	mu.Unlock()
	r.FailDownstreamAcquire(func(string) error { return errors.New("the limits cannot be read") })
	req, err := r.Replays().Request(context.Background(), runner.ReplayParams{RunID: first.ID, Scope: bt.ScopeFailed, Reason: "retry failed", Actor: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	if req.ReplayRunID == nil {
		t.Fatalf("replay request %s started no run", req.Status)
	}
	got := b.waitStatus(*req.ReplayRunID, bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled)
	if state, _ := b.ledgerState("turn-replay", "x"); state != string(bt.LedgerValidationRejected) {
		t.Errorf("x is %q after a replay (%s) that never called it; want VALIDATION_REJECTED kept", state, got.Status)
	}
}
