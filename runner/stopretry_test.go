package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// stopMidCallJob works targets t0…t<n-1> in order, one Process each, its checkpoint the
// number of the next. On its first attempt, the call of target stopAt asks the run to stop
// (reason) and then fails TRANSIENT: the failure is settled by a run that already knows it
// must stop, as when a pause or a shutdown arrives during a call that fails.
type stopMidCallJob struct {
	name     string
	n        int
	stopAt   int
	reason   bt.StopReason
	external bool

	mu    sync.Mutex
	calls map[int][]int
}

func (j *stopMidCallJob) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Description: "asks to stop during a call that fails", Version: "1", Lease: 30 * time.Second,
		// A day's backoff: a run asked to stop must not sit it out before it stops.
		Retry:          runner.RetryPolicy{MaxAttempts: 3, InitialBackoff: 24 * time.Hour, MaxBackoff: 24 * time.Hour},
		StopConditions: []runner.StopCondition{}}
}

func (j *stopMidCallJob) Run(ctx context.Context, run *runner.Run) error {
	start, err := checkpointNumber(run)
	if err != nil {
		return err
	}
	for i := start; i < j.n; i++ {
		item := runner.Item{Target: fmt.Sprintf("t%d", i), Input: i, Checkpoint: strconv.Itoa(i + 1), External: j.external}
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			j.mu.Lock()
			j.calls[i] = append(j.calls[i], a.Number)
			j.mu.Unlock()
			if i == j.stopAt && a.Number == 1 {
				run.AskToStop(j.reason)
				return runner.Transient(errors.New("HTTP 503"))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *stopMidCallJob) callsOf(i int) []int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]int(nil), j.calls[i]...)
}

// TestStopDuringRetryableFailureKeepsItsCheckpoint: a target whose call fails TRANSIENT with
// attempts left, settled after the run was asked to stop, is recorded TRANSIENT with the
// checkpoint before it, as a stop during the backoff does, so the RESUME retries it, and the
// run stops without waiting out the retry's backoff. It used
// to be recorded as a final failure with the checkpoint past it, and the RESUME skipped it: a
// page a rolling deploy lost.
func TestStopDuringRetryableFailureKeepsItsCheckpoint(t *testing.T) {
	for _, external := range []bool{true, false} {
		t.Run(fmt.Sprintf("external=%v", external), func(t *testing.T) {
			b := setup(t)
			name := fmt.Sprintf("stop-mid-call-%v", external)
			job := &stopMidCallJob{name: name, n: 4, stopAt: 1, reason: bt.StopPaused, external: external, calls: map[int][]int{}}
			r := b.runner(nil, job)
			paused := b.finish(r, mustStart(t, r, runner.StartParams{Job: name}))
			if paused.Status != bt.StatusPaused || paused.Checkpoint != "1" {
				t.Fatalf("run %d ended %s at checkpoint %q (%s); want PAUSED at checkpoint 1, before t1", paused.ID, paused.Status, paused.Checkpoint, paused.Message)
			}
			if e := b.entry(name, "t1"); e == nil || e.State != bt.LedgerTransient || e.Attempt != 1 {
				t.Fatalf("t1 after the stop: %+v, want TRANSIENT at attempt 1", e)
			}
			if e := b.entry(name, "t2"); e != nil {
				t.Fatalf("t2 after the stop: %+v, want no row: the run stopped before it", e)
			}
			b.wantCounters(paused, counters{processed: 2, succeeded: 1, failed: 1})
			b.checkCounts(r, name, paused.Generation, paused.ID)

			resumed := b.succeed(r, runner.StartParams{Job: name, Mode: bt.ModeResume})
			if got := job.callsOf(1); fmt.Sprint(got) != "[1 2]" {
				t.Errorf("t1 was called with attempts %v, want [1 2]: the RESUME retries it", got)
			}
			for i := range job.n {
				if e := b.mustEntry(name, fmt.Sprintf("t%d", i)); e.State != bt.LedgerConfirmed {
					t.Errorf("t%d is %s after the RESUME, want CONFIRMED", i, e.State)
				}
			}
			b.wantCounters(resumed, counters{processed: 3, succeeded: 3})
			b.checkCounts(r, name, resumed.Generation, resumed.ID)
		})
	}
}
