package runner_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestLeaseOverrideHoldsThroughRenewals: a run of a job that declares a 300s lease, started
// after an operator set a 20s override, holds 20s from its start and renews by 20s. The
// instance's clock is moved on 12s (more than half the override, far less than half the
// job's own lease) while the run waits, so its next safe point renews only if the run
// counts with the override.
func TestLeaseOverrideHoldsThroughRenewals(t *testing.T) {
	b := setup(t)
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	waiting, proceed := make(chan struct{}), make(chan struct{})
	job := runner.NewJob(runner.JobInfo{Name: "renewed", Lease: 300 * time.Second}, func(ctx context.Context, run *runner.Run) error {
		if err := run.SetTotal(ctx, 1); err != nil {
			return err
		}
		for range 2 {
			waiting <- struct{}{}
			<-proceed
			if err := run.Check(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	r := b.runner(func(c *runner.Config) { c.NowFunc = now }, job)
	ctx := context.Background()
	override := 20 * time.Second
	if _, err := r.Jobs().UpdateSchedule(ctx, "renewed", runner.ScheduleUpdate{Lease: &override, Actor: "ops"}); err != nil {
		t.Fatal(err)
	}
	id := mustStart(t, r, runner.StartParams{Job: "renewed"})
	lease := func() (secs int, span time.Duration, beat time.Time) {
		t.Helper()
		var f float64
		if err := b.Pool.QueryRow(ctx, `SELECT lease_seconds, EXTRACT(EPOCH FROM lease_until - heartbeat_at)::float8, heartbeat_at
			FROM job_runs WHERE id = $1`, id).Scan(&secs, &f, &beat); err != nil {
			t.Fatal(err)
		}
		return secs, time.Duration(f * float64(time.Second)), beat
	}
	select {
	case <-waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not start")
	}
	secs, _, before := lease()
	if secs != 20 {
		t.Fatalf("the run holds lease_seconds %d, want the 20s override", secs)
	}
	skew.Store(int64(12 * time.Second))
	proceed <- struct{}{}
	select {
	case <-waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not reach its second wait")
	}
	secs, span, after := lease()
	if !after.After(before) || span != override || secs != 20 {
		t.Fatalf("after the safe point: heartbeat %s (was %s), lease_until - heartbeat_at %s, lease_seconds %d; "+
			"want a renewal by the 20s override", after, before, span, secs)
	}
	proceed <- struct{}{}
	b.waitStatus(id, bt.StatusSucceeded)
}
