package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// renewingJob reaches safe points until its run has recorded renewals renewals.
type renewingJob struct {
	name     string
	renewals int
	count    func(runID int64) int
}

func (j *renewingJob) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Description: "renews its lease", Version: "1"}
}

func (j *renewingJob) Run(ctx context.Context, run *runner.Run) error {
	// The job's own pace between safe points: its "work". The lease (2 s) is renewed at a safe
	// point once less than half of it is left.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for j.count(run.ID()) < j.renewals {
		if err := run.Check(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// TestLeaseRenewalsAreRecorded runs a job long enough to renew its lease three times: each
// renewal is on the run's timeline, in order, with the lease end it set, and the run ends
// SUCCEEDED.
func TestLeaseRenewalsAreRecorded(t *testing.T) {
	b := setup(t)
	job := &renewingJob{name: "renews", renewals: 3, count: func(id int64) int {
		return b.count(`SELECT count(*) FROM job_run_events WHERE run_id = $1 AND kind = 'LEASE_RENEWED'`, id)
	}}
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: "renews"})
	rec := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	if rec.Status != bt.StatusSucceeded {
		t.Fatalf("run ended %s: %s", rec.Status, rec.Message)
	}
	events, err := r.Runs().EventsOfRuns(context.Background(), []int64{id}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var renewals []runner.TimelineEvent
	for _, e := range events[id] {
		if e.Kind == runner.EventLeaseRenewed {
			renewals = append(renewals, e)
		}
	}
	if len(renewals) < 3 {
		t.Fatalf("%d renewals recorded, want at least 3: %+v", len(renewals), events[id])
	}
	for k, e := range renewals {
		if !strings.HasPrefix(e.Detail, "lease until ") {
			t.Errorf("renewal %d detail %q", k, e.Detail)
		}
		if k > 0 && !e.At.After(renewals[k-1].At) {
			t.Errorf("renewal %d at %v, not after the one before (%v)", k, e.At, renewals[k-1].At)
		}
	}
	// Only the latest are read when asked for fewer.
	latest, err := r.Runs().EventsOfRuns(context.Background(), []int64{id}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := latest[id]; len(got) != 1 || got[0].ID != renewals[len(renewals)-1].ID {
		t.Fatalf("latest renewal: %+v, want %+v", got, renewals[len(renewals)-1])
	}
}

// TestStopConditionTripIsRecorded: a run that stops itself for a stop condition has the trip
// on its timeline, naming the condition.
func TestStopConditionTripIsRecorded(t *testing.T) {
	b := setup(t)
	targets := make([]string, 10)
	for i := range targets {
		targets[i] = fmt.Sprintf("s%02d", i+1)
	}
	job := newLedgerJob("mailer", targets...)
	job.info.StopConditions = []runner.StopCondition{{Name: "reject rate over 10%", Metric: runner.RejectRate, Threshold: 0.10, MinCalls: 5, Window: time.Minute}}
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if target > "s03" {
			return runner.Rejected(errors.New("HTTP 400: invalid address"))
		}
		return nil
	}
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: "mailer"})
	rec := b.finish(r, id)
	if rec.StopReason != bt.StopCondition {
		t.Fatalf("run ended %s / %s, want STOP_CONDITION", rec.Status, rec.StopReason)
	}
	events, err := r.Runs().EventsOfRuns(context.Background(), []int64{id}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var trips []runner.TimelineEvent
	for _, e := range events[id] {
		if e.Kind == runner.EventStopCondition {
			trips = append(trips, e)
		}
	}
	if len(trips) != 1 || !strings.Contains(trips[0].Detail, "reject rate over 10%") {
		t.Fatalf("stop-condition events %+v, want one naming the condition", trips)
	}
}
