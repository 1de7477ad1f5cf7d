package runner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestRegisterManyJobs registers more jobs than one registration statement holds, checks that
// every one is stored and gets its next fire from the scheduler's first pass, that a
// registration by another instance updates what follows the code and keeps the runtime-edited
// schedule, and that a duplicate name still fails with its code and registers nothing of that
// call.
func TestRegisterManyJobs(t *testing.T) {
	b := setup(t)
	const n = 2500
	jobs := func(desc string) []runner.Job {
		out := make([]runner.Job, n)
		for i := range out {
			out[i] = runner.NewJob(runner.JobInfo{Name: fmt.Sprintf("bulk-%04d", i), Description: desc, Cron: "0 3 * * *"},
				func(context.Context, *runner.Run) error { return nil })
		}
		return out
	}
	b.runner(schedulerOn, jobs("first")...)
	testenv.Eventually(t, 20*time.Second, "every job registered with its next fire", func() bool {
		return b.count(`SELECT count(*) FROM job_settings WHERE name LIKE 'bulk-%' AND description = 'first' AND next_scheduled_at IS NOT NULL`) == n
	})
	if _, err := b.Pool.Exec(context.Background(), `UPDATE job_settings SET cron = '0 4 * * *' WHERE name = 'bulk-0042'`); err != nil {
		t.Fatal(err)
	}

	other, err := runner.New(runner.Config{DB: b.Pool, Redis: b.Redis, Env: b.Env, MaintenanceCron: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Register(context.Background(), jobs("second")...); err != nil {
		t.Fatal(err)
	}
	if got := b.count(`SELECT count(*) FROM job_settings WHERE name LIKE 'bulk-%' AND description = 'second'`); got != n {
		t.Fatalf("%d of %d descriptions follow the code", got, n)
	}
	if got := b.count(`SELECT count(*) FROM job_settings WHERE name = 'bulk-0042' AND cron = '0 4 * * *'`); got != 1 {
		t.Fatal("registration overwrote the runtime-edited cron")
	}

	fresh := runner.NewJob(runner.JobInfo{Name: "fresh"}, func(context.Context, *runner.Run) error { return nil })
	err = other.Register(context.Background(), fresh, jobs("third")[7])
	if bt.CodeOf(err) != bt.CodeDuplicateJob {
		t.Fatalf("registering a name twice: %v, want %s", err, bt.CodeDuplicateJob)
	}
	if _, ok := other.Job("fresh"); ok || b.count(`SELECT count(*) FROM job_settings WHERE name = 'fresh'`) != 0 {
		t.Fatal("a refused registration registered part of its call")
	}
}

// TestSchedulerSkipsJobsItDoesNotRun checks that a scheduler neither fires nor schedules a due
// job that only another instance registered, and fires its own.
func TestSchedulerSkipsJobsItDoesNotRun(t *testing.T) {
	b := setup(t)
	mine := newItemsJob("mine", 1)
	mine.cron = "0 0 4 * * *"
	ctx := context.Background()
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_settings (name, cron, next_scheduled_at) VALUES
		('theirs', '0 0 4 * * *', now() - interval '1 minute'), ('theirs-unset', '0 0 4 * * *', NULL)`); err != nil {
		t.Fatal(err)
	}
	r := b.runner(schedulerOn, mine)
	testenv.Eventually(t, 10*time.Second, "own next fire computed", func() bool {
		return b.count(`SELECT count(*) FROM job_settings WHERE name = 'mine' AND next_scheduled_at IS NOT NULL`) == 1
	})
	if _, err := b.Pool.Exec(ctx, `UPDATE job_settings SET next_scheduled_at = now() - interval '1 second' WHERE name = 'mine'`); err != nil {
		t.Fatal(err)
	}
	r.Wake()
	testenv.Eventually(t, 10*time.Second, "own due fire to run", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'mine' AND trigger = 'SCHEDULED'`) == 1
	})
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name LIKE 'theirs%'`); n != 0 {
		t.Fatalf("%d runs of jobs this instance does not run", n)
	}
	if n := b.count(`SELECT count(*) FROM job_settings WHERE name = 'theirs-unset' AND next_scheduled_at IS NULL`); n != 1 {
		t.Fatal("the scheduler computed the next fire of a job it does not run")
	}
}

// TestRunStoppedAtOnceStopsCleanly: a runner asked to stop before it has registered its
// maintenance job still registers it and stops without an error.
func TestRunStoppedAtOnceStopsCleanly(t *testing.T) {
	b := setup(t)
	r, err := runner.New(runner.Config{DB: b.Pool, Redis: b.Redis, Env: b.Env})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run, stopped at once: %v", err)
	}
	if got := b.count(`SELECT count(*) FROM job_settings WHERE name = '` + runner.MaintenanceJobName + `'`); got != 1 {
		t.Fatalf("%d maintenance jobs registered, want 1", got)
	}
}
