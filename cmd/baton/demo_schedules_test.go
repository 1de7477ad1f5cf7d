package main

import (
	"context"
	"testing"

	"github.com/baton-run/baton/internal/demo"
	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
)

// TestDemoSchedulesOff: with BATON_DEMO_SCHEDULES=false no demo job is on a schedule, not
// even one an earlier start with schedules stored in the database; the change is audited.
func TestDemoSchedulesOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t, testenv.Schema(t))
	rdb, env := testenv.Redis(t)
	register := func(cfg demo.Config, schedulesOff bool) {
		t.Helper()
		jobs, err := demoJobsFunc(ctx, cfg, schedulesOff)(pool)
		if err != nil {
			t.Fatal(err)
		}
		r, err := runner.New(runner.Config{DB: pool, Redis: rdb, Env: env, MaintenanceCron: "-"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Register(ctx, jobs...); err != nil {
			t.Fatal(err)
		}
	}
	scheduled := `SELECT count(*) FROM job_settings WHERE name LIKE 'demo-%' AND cron <> ''`

	on := demo.FastConfig()
	on.Collect.Cron, on.Flaky.Cron = "0 */15 * * * *", "0 0 4 * * *"
	register(on, false)
	if got := testbundle.Count(t, pool, scheduled); got != 2 {
		t.Fatalf("%d demo jobs on a schedule after a start with schedules, want 2", got)
	}

	off := on
	off.Collect.Cron, off.Flaky.Cron = "", "" // what demoConfig makes of BATON_DEMO_SCHEDULES=false
	register(off, true)
	if got := testbundle.Count(t, pool, scheduled); got != 0 {
		t.Fatalf("%d demo jobs still on a schedule with BATON_DEMO_SCHEDULES=false, want none", got)
	}
	if got := testbundle.Count(t, pool, `SELECT count(*) FROM audit_log WHERE action = 'updateJobSchedule' AND target LIKE 'job:demo-%'`); got != 2 {
		t.Fatalf("%d audited schedule changes, want 2", got)
	}
}
