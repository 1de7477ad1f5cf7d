package runner_test

import (
	"context"
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
