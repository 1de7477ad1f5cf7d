package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// A scheduled fire in RESTART mode opens a new generation, calling every target again under new
// keys. While the current generation holds a target in doubt it is refused by the same gate as a
// manual RESTART: the fire is claimed and recorded BLOCKED_IN_DOUBT, counted in
// baton_scheduled_fires_blocked_total and raised as the SCHEDULED_FIRE_BLOCKED alarm; no new
// generation opens and the target in doubt is not called again.
func TestScheduledRestartIsBlockedWhileTargetsAreInDoubt(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job, phase := settleJob("settlement", "ok", "amb")
	job.info.Risk = bt.RiskHigh
	reg := prometheus.NewRegistry()
	r := b.runner(func(c *runner.Config) { schedulerOn(c); c.Registerer = reg }, job)
	b.succeed(r, runner.StartParams{Job: "settlement"})
	phase.Store(2)
	gen := b.currentGeneration("settlement")

	// The schedule fires every second: set the way the job's own code or an approved change
	// would set it.
	if _, err := b.Pool.Exec(ctx, `UPDATE job_settings SET cron = '* * * * * *', enabled = true, next_scheduled_at = NULL WHERE name = 'settlement'`); err != nil {
		t.Fatal(err)
	}
	r.Wake()
	testenv.Eventually(t, 20*time.Second, "a fire recorded BLOCKED_IN_DOUBT", func() bool {
		r.Wake()
		return b.count(`SELECT count(*) FROM job_schedule_events WHERE job_name = 'settlement' AND outcome = 'BLOCKED_IN_DOUBT'`) >= 1 ||
			b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'settlement' AND trigger = 'SCHEDULED'`) >= 1
	})
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'settlement' AND trigger = 'SCHEDULED'`); n != 0 {
		t.Fatalf("%d scheduled runs started while a target was in doubt, want 0", n)
	}
	if g := b.currentGeneration("settlement"); g != gen || job.callsOf("amb") != 1 {
		t.Fatalf("after the blocked fire: generation %d (want %d), amb called %d times (want 1)", g, gen, job.callsOf("amb"))
	}
	if v := counterValue(t, reg, "baton_scheduled_fires_blocked_total", nil); v < 1 {
		t.Fatalf("baton_scheduled_fires_blocked_total = %v, want at least 1", v)
	}
	alerts, err := r.Alarms().Active(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range alerts {
		found = found || (string(a.Kind) == "SCHEDULED_FIRE_BLOCKED" && a.JobName == "settlement" && a.Severity == "CRITICAL")
	}
	if !found {
		t.Fatalf("alarms %+v, want a CRITICAL SCHEDULED_FIRE_BLOCKED for settlement", alerts)
	}

	// Settled by hand, the next fire restarts the job, and the alarm clears.
	if _, err := r.Jobs().Pause(ctx, "settlement", "ops"); err != nil {
		t.Fatal(err)
	}
	e := b.mustEntry("settlement", "amb")
	if _, err := r.Ledger().ResolveAmbiguous(ctx, e.ID, runner.ResolveNotApplied, "", "provider has no such payment", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Jobs().Resume(ctx, "settlement", "ops"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "a scheduled RESTART once nothing is in doubt", func() bool {
		r.Wake()
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'settlement' AND trigger = 'SCHEDULED'`) >= 1
	})
	if _, err := r.Jobs().Pause(ctx, "settlement", "ops"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the SCHEDULED_FIRE_BLOCKED alarm to clear", func() bool {
		alerts, err := r.Alarms().Active(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range alerts {
			if string(a.Kind) == "SCHEDULED_FIRE_BLOCKED" {
				return false
			}
		}
		return true
	})
}

// A change that can make a HIGH-risk job's schedule fire is not applied by one person: it is
// recorded as a SCHEDULE request (APPROVAL_REQUIRED, the request returned), its requester cannot
// approve it, and it applies when another identity does. Changes that make no fire (disabling,
// a lease alone) apply at once, and a LOW-risk job's schedule changes at once.
func TestHighRiskScheduleIsNotChangedByOnePerson(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job, phase := settleJob("settlement", "ok", "amb")
	job.info.Risk = bt.RiskHigh
	low := newItemsJob("digest", 1)
	r := b.runner(nil, job, low)
	b.succeed(r, runner.StartParams{Job: "settlement"})
	phase.Store(2)

	cron, on := "* * * * *", true
	_, err := r.Jobs().UpdateSchedule(ctx, "settlement", runner.ScheduleUpdate{Cron: &cron, Enabled: &on, Actor: "operator", ActorTokenID: 7, Reason: "run it every minute"})
	var pending *runner.ScheduleRequestedError
	if code(err) != bt.CodeApprovalRequired || !errors.As(err, &pending) || pending.Request == nil {
		t.Fatalf("cron on a HIGH-risk job by one person: %v; want APPROVAL_REQUIRED with the request", err)
	}
	req := pending.Request
	if req.Kind != bt.KindSchedule || req.Status != bt.ReplayPendingApproval || req.ScheduleChange == nil || *req.ScheduleChange.Cron != cron ||
		req.RequestedBy != "operator" || req.Reason != "run it every minute" {
		t.Fatalf("schedule request %+v", req)
	}
	j, err := r.Jobs().Get(ctx, "settlement")
	if err != nil {
		t.Fatal(err)
	}
	if j.Cron != "" {
		t.Fatalf("the cron was applied before approval: %q", j.Cron)
	}
	b.wantAudit("operator", "updateJobSchedule", "job:settlement", string(bt.CodeApprovalRequired))

	// The requester cannot approve it, by token or by name.
	if _, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "other-name", TokenID: 7}, "mine"); code(err) != bt.CodeSelfApproval {
		t.Fatalf("approval by the requester's token: %v, want SELF_APPROVAL", err)
	}
	if _, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "operator"}, "mine"); code(err) != bt.CodeSelfApproval {
		t.Fatalf("approval by the requester's name: %v, want SELF_APPROVAL", err)
	}
	if j, _ := r.Jobs().Get(ctx, "settlement"); j.Cron != "" {
		t.Fatalf("the cron was applied by a refused approval: %q", j.Cron)
	}

	// Another identity approves it: the change applies, the request is EXECUTED and starts no run.
	out, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "approver", TokenID: 8}, "ok")
	if err != nil || out.Status != bt.ReplayExecuted || out.ReplayRunID != nil || out.DecidedBy == nil || *out.DecidedBy != "approver" {
		t.Fatalf("approval by another identity: %+v, %v", out, err)
	}
	if j, _ := r.Jobs().Get(ctx, "settlement"); j.Cron != cron || !j.Enabled {
		t.Fatalf("after approval: cron %q enabled %t, want %q enabled", j.Cron, j.Enabled, cron)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'settlement'`); n != 1 {
		t.Fatalf("%d runs after the schedule approval, want 1", n)
	}

	// Disabling makes no fire: it applies at once. Enabling again is a request again.
	off := false
	if _, err := r.Jobs().UpdateSchedule(ctx, "settlement", runner.ScheduleUpdate{Enabled: &off, Actor: "operator"}); err != nil {
		t.Fatalf("disable: %v", err)
	}
	if _, err := r.Jobs().UpdateSchedule(ctx, "settlement", runner.ScheduleUpdate{Enabled: &on, Actor: "operator"}); code(err) != bt.CodeApprovalRequired {
		t.Fatalf("enable by one person: %v, want APPROVAL_REQUIRED", err)
	}
	lease := 60 * time.Second
	if _, err := r.Jobs().UpdateSchedule(ctx, "settlement", runner.ScheduleUpdate{Lease: &lease, Actor: "operator"}); err != nil {
		t.Fatalf("lease alone: %v", err)
	}

	// A LOW-risk job's schedule changes at once.
	if _, err := r.Jobs().UpdateSchedule(ctx, "digest", runner.ScheduleUpdate{Cron: &cron, Actor: "operator"}); err != nil {
		t.Fatalf("cron on a LOW-risk job: %v", err)
	}
}
