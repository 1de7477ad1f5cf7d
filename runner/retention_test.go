package runner_test

import (
	"context"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestRetentionPrunesExactlyExpiredGenerations(t *testing.T) {
	b := setup(t)
	low := newItemsJob("low", 3)
	high := &riskyJob{newItemsJob("high", 3)}
	r := b.runner(nil, low, high)
	for _, name := range []string{"low", "high"} {
		for g := range 3 { // generations 2, 3 and 4 (RESTART opens a new one each time)
			if name == "low" || g == 0 {
				b.waitStatus(mustStart(t, r, runner.StartParams{Job: name, Mode: bt.ModeRestart}), bt.StatusSucceeded)
				continue
			}
			// A HIGH-risk job that has run restarts through the gate: requested, approved by another.
			b.waitStatus(b.restartApproved(r, name), bt.StatusSucceeded)
		}
	}
	ctx := context.Background()
	// Generation 2 expired 91 days ago; generation 3 is 89 days old; 4 is current.
	exec := func(sql string) {
		if _, err := b.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE job_ledger SET updated_at = now() - interval '91 days' WHERE generation = 2`)
	exec(`UPDATE job_ledger SET updated_at = now() - interval '89 days' WHERE generation = 3`)
	exec(`UPDATE job_ledger SET updated_at = now() - interval '500 days' WHERE generation = 4 AND job_name = 'low'`)
	b.waitStatus(mustStart(t, r, runner.StartParams{Job: runner.MaintenanceJobName}), bt.StatusSucceeded)

	left := func(job string, gen int) int {
		return b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND generation = $2`, job, gen)
	}
	if n := left("low", 2); n != 0 {
		t.Fatalf("low gen 2 (91 days, retention 90): %d rows left, want 0", n)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger_counts WHERE job_name = 'low' AND generation = 2`); n != 0 {
		t.Fatalf("low gen 2 counters left behind: %d", n)
	}
	for _, c := range []struct {
		job string
		gen int
	}{{"low", 3}, {"low", 4}, {"high", 2}, {"high", 3}, {"high", 4}} {
		if n := left(c.job, c.gen); n != 3 {
			t.Fatalf("%s gen %d: %d rows, want all 3 kept", c.job, c.gen, n)
		}
	}
}

// riskyJob is a HIGH-risk job: its ledger is kept 400 days.
type riskyJob struct{ *itemsJob }

func (j *riskyJob) Info() runner.JobInfo {
	info := j.itemsJob.Info()
	info.Risk = bt.RiskHigh
	return info
}
