package runner_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// errSideTable is the failure of a job's own write (Attempt.Tx) after its call was made.
var errSideTable = errors.New("side table refused the row")

// failingTx queues a job write that fails: the call has happened, its result write cannot land.
func failingTx(a *runner.Attempt) {
	a.Tx(func(context.Context, pgx.Tx) error { return errSideTable })
}

// waitForStop is what a job that carries on after a failed item does at its next safe point:
// it keeps reaching Check until the run is asked to stop, and returns that.
func waitForStop(ctx context.Context, run *runner.Run) error {
	deadline := time.After(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := run.Check(ctx); err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-deadline:
			return errors.New("never asked to stop")
		}
	}
}

// TestRunEndSettlesIntents checks that however a run ends, no target of it stays IN_FLIGHT:
// an intent whose result never landed becomes AMBIGUOUS_EFFECT in the run's own end, the
// counters say so, the ambiguous alarm fires, and reconcile and manual resolution settle the
// targets.
func TestRunEndSettlesIntents(t *testing.T) {
	t.Parallel()
	type ended struct {
		status bt.RunStatus
		reason bt.StopReason
	}
	for _, tc := range []struct {
		name string
		// job makes the job under test; drive, when set, is called with the runner and the
		// run id once the run is going, and may end it from outside.
		job       func(reached chan<- string, gate <-chan struct{}) *reconcilingJob
		config    func(*runner.Config)
		drive     func(t *testing.T, r *runner.Runner, id int64, reached <-chan string)
		want      ended
		ambiguous []string
		confirmed []string
	}{{
		name: "failing Attempt.Tx, strict",
		job: func(chan<- string, <-chan struct{}) *reconcilingJob {
			j := newLedgerJob("strict-tx", "p1", "p2")
			j.behave = func(_ context.Context, target string, a *runner.Attempt) error {
				if target == "p1" {
					failingTx(a)
				}
				return nil
			}
			return &reconcilingJob{ledgerJob: j}
		},
		want:      ended{bt.StatusFailed, bt.StopError},
		ambiguous: []string{"p1"},
	}, {
		name: "failing Attempt.Tx, batch",
		job: func(chan<- string, <-chan struct{}) *reconcilingJob {
			j := newLedgerJob("batch-tx", "b1", "b2", "b3")
			return &reconcilingJob{ledgerJob: j}
		},
		want:      ended{bt.StatusFailed, bt.StopError},
		ambiguous: []string{"b1", "b2", "b3"},
	}, {
		name: "shutdown abandon",
		job: func(reached chan<- string, gate <-chan struct{}) *reconcilingJob {
			j := newLedgerJob("abandoned", "s1", "s2")
			j.behave = func(_ context.Context, target string, _ *runner.Attempt) error {
				if target == "s2" {
					reached <- target
					<-gate // a call that ignores its context: the run does not stop in time
				}
				return nil
			}
			return &reconcilingJob{ledgerJob: j}
		},
		config: func(c *runner.Config) { c.ShutdownTimeout = 200 * time.Millisecond },
		drive: func(t *testing.T, r *runner.Runner, id int64, reached <-chan string) {
			<-reached
			if err := r.Shutdown(context.Background()); err == nil {
				t.Fatal("shutdown returned nil with a run that did not stop")
			}
		},
		want:      ended{bt.StatusFailed, bt.StopShutdownTimer},
		ambiguous: []string{"s2"},
		confirmed: []string{"s1"},
	}, {
		name: "cancel with an intent open",
		job: func(reached chan<- string, gate <-chan struct{}) *reconcilingJob {
			return carryOnJob("cancelled", reached, gate)
		},
		drive: func(t *testing.T, r *runner.Runner, id int64, reached <-chan string) {
			<-reached
			if _, err := r.Runs().Cancel(context.Background(), id, "ops"); err != nil {
				t.Fatal(err)
			}
		},
		want:      ended{bt.StatusCancelled, bt.StopCancelled},
		ambiguous: []string{"c1"},
	}, {
		name: "pause with an intent open",
		job: func(reached chan<- string, gate <-chan struct{}) *reconcilingJob {
			return carryOnJob("paused", reached, gate)
		},
		drive: func(t *testing.T, r *runner.Runner, id int64, reached <-chan string) {
			<-reached
			if _, err := r.Jobs().Pause(context.Background(), "paused", "ops"); err != nil {
				t.Fatal(err)
			}
		},
		want:      ended{bt.StatusPaused, bt.StopPaused},
		ambiguous: []string{"c1"},
	}, {
		name: "maintenance with an intent open",
		job: func(reached chan<- string, gate <-chan struct{}) *reconcilingJob {
			return carryOnJob("maintained", reached, gate)
		},
		drive: func(t *testing.T, r *runner.Runner, id int64, reached <-chan string) {
			<-reached
			if _, err := r.SetMaintenance(context.Background(), true, "ops"); err != nil {
				t.Fatal(err)
			}
		},
		want:      ended{bt.StatusPaused, bt.StopMaintenance},
		ambiguous: []string{"c1"},
	}, {
		name: "job error after a failed write",
		job: func(chan<- string, <-chan struct{}) *reconcilingJob {
			j := newLedgerJob("job-error", "e1")
			return &reconcilingJob{ledgerJob: j}
		},
		want:      ended{bt.StatusFailed, bt.StopError},
		ambiguous: []string{"e1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			ctx := context.Background()
			reached, gate := make(chan string, 10), make(chan struct{})
			defer close(gate)
			job := tc.job(reached, gate)
			job.reconcile = func(_ context.Context, target, _, _ string) (runner.Reconciliation, error) {
				return runner.Reconciliation{Applied: true, EvidenceRef: "provider:" + target}, nil
			}
			var j runner.Job = job
			switch job.info.Name {
			case "batch-tx":
				j = batchJob{job, func(a *runner.Attempt, target string) {
					if target == "b2" {
						failingTx(a)
					}
				}}
			case "job-error":
				j = swallowJob{job}
			case "cancelled", "paused", "maintained":
				j = carryOn{job}
			}
			r := b.runner(tc.config, j)
			id := mustStart(t, r, runner.StartParams{Job: job.info.Name})
			if tc.drive != nil {
				tc.drive(t, r, id, reached)
			}
			rec := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled, bt.StatusPaused)
			if rec.Status != tc.want.status || rec.StopReason != tc.want.reason {
				t.Fatalf("run ended %s (%s: %s), want %s (%s)", rec.Status, rec.StopReason, rec.Message, tc.want.status, tc.want.reason)
			}
			name := job.info.Name
			for _, target := range tc.ambiguous {
				if e := b.mustEntry(name, target); e.State != bt.LedgerAmbiguous || e.RunID != id {
					t.Fatalf("%s is %s of run %d after the run ended, want AMBIGUOUS_EFFECT of run %d", target, e.State, e.RunID, id)
				}
			}
			for _, target := range tc.confirmed {
				if e := b.mustEntry(name, target); e.State != bt.LedgerConfirmed {
					t.Fatalf("%s is %s, want CONFIRMED", target, e.State)
				}
			}
			if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND state = 'IN_FLIGHT'`, name); n != 0 {
				t.Fatalf("%d targets left IN_FLIGHT by an ended run", n)
			}
			stored, err := r.Runs().Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Ambiguous != int64(len(tc.ambiguous)) {
				t.Fatalf("run's ambiguous counter %d, want %d", stored.Ambiguous, len(tc.ambiguous))
			}
			b.checkCounts(r, name, rec.Generation, id)
			wantAmbiguousAlarm(t, r, name, int64(len(tc.ambiguous)))

			// Reconcile the first, resolve the rest by hand: the alarm goes. A fresh instance
			// does it, since the run's own may have shut down; its worker runs the hook.
			r = b.runner(nil, j)
			for i, target := range tc.ambiguous {
				e := b.mustEntry(name, target)
				var got *bt.LedgerEntry
				if i == 0 {
					got, err = b.reconcile(r, e.ID, "ops")
				} else {
					got, err = r.Ledger().ResolveAmbiguous(ctx, e.ID, runner.ResolveNotApplied, "", "provider has no record", "ops")
				}
				if err != nil {
					t.Fatalf("settle %s: %v", target, err)
				}
				if want := map[bool]bt.LedgerState{true: bt.LedgerConfirmed, false: bt.LedgerNotApplied}[i == 0]; got.State != want {
					t.Fatalf("%s settled as %s, want %s", target, got.State, want)
				}
			}
			wantAmbiguousAlarm(t, r, name, 0)
			b.checkCounts(r, name, rec.Generation)
		})
	}
}

// carryOnJob processes c1 (external), whose result write fails, signals reached once the
// call has been made, and then, like a job that logs a failed item and carries on, waits at
// its safe points until it is asked to stop.
func carryOnJob(name string, reached chan<- string, gate <-chan struct{}) *reconcilingJob {
	j := newLedgerJob(name, "c1")
	j.behave = func(_ context.Context, target string, a *runner.Attempt) error {
		failingTx(a)
		reached <- target
		return nil
	}
	return &reconcilingJob{ledgerJob: j}
}

// carryOn runs a job's targets, logging failed items instead of returning them, and then
// waits at its safe points until it is asked to stop.
type carryOn struct{ *reconcilingJob }

func (j carryOn) Run(ctx context.Context, run *runner.Run) error {
	for i, target := range j.targets {
		item := j.item(i, target)
		if err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			return j.call(ctx, item.Target, a)
		}); err != nil {
			run.Logger().Warn("item failed; carrying on", "target", target, "err", err)
		}
	}
	return waitForStop(ctx, run)
}

// swallowJob processes its targets with a failing job write, carries on past the failure, and
// then fails the run with an error of its own.
type swallowJob struct{ *reconcilingJob }

func (j swallowJob) Run(ctx context.Context, run *runner.Run) error {
	for i, target := range j.targets {
		item := j.item(i, target)
		if err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			failingTx(a)
			return j.call(ctx, item.Target, a)
		}); err != nil {
			run.Logger().Warn("item failed; carrying on", "target", target, "err", err)
		}
	}
	return fmt.Errorf("the job gave up: %w", errBoom)
}

// batchJob processes all its targets in one ProcessBatch; tx adds job writes per target.
type batchJob struct {
	*reconcilingJob
	tx func(a *runner.Attempt, target string)
}

func (j batchJob) Run(ctx context.Context, run *runner.Run) error {
	items := make([]runner.Item, len(j.targets))
	for i, target := range j.targets {
		items[i] = j.item(i, target)
	}
	return run.ProcessBatch(ctx, items, 2, func(ctx context.Context, item runner.Item, a *runner.Attempt) error {
		j.tx(a, item.Target)
		return j.call(ctx, item.Target, a)
	})
}

// wantAmbiguousAlarm checks the AMBIGUOUS_EFFECT alarm of job: raised with n targets, or
// absent when n is 0.
func wantAmbiguousAlarm(t *testing.T, r *runner.Runner, job string, n int64) {
	t.Helper()
	alerts, err := r.Alarms().Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	for _, a := range alerts {
		if a.Kind == bt.AlertAmbiguousEffect && a.JobName == job {
			got = int64(a.Value)
		}
	}
	if got != n {
		t.Fatalf("ambiguous alarm of %s counts %d targets, want %d (alerts %+v)", job, got, n, alerts)
	}
}
