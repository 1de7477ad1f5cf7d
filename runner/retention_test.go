package runner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
		if _, err := b.Pool.Exec(ctx, sql); err != nil {
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

// Retention never prunes a generation still owed: the current one, one a PENDING_APPROVAL or
// APPROVED replay request refers to, one holding a target in doubt or an intent without
// outcome. A generation only a REJECTED request refers to goes like any other.
func TestRetentionKeepsOwedGenerations(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job := newItemsJob("owed", 3)
	r := b.runner(nil, job)
	runs := map[int]int64{} // generation → its run
	for gen := 2; gen <= 7; gen++ {
		runs[gen] = mustStart(t, r, runner.StartParams{Job: "owed", Mode: bt.ModeRestart})
		if rec := b.waitStatus(runs[gen], bt.StatusSucceeded); rec.Generation != int64(gen) {
			t.Fatalf("run %d is of generation %d, want %d", rec.ID, rec.Generation, gen)
		}
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := b.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	request := func(gen int, status string) {
		exec(`INSERT INTO replay_requests (job_name, source_run_id, generation, scope, status, preflight, reason, requested_by)
			VALUES ('owed', $1, $2, 'FULL', $3, '{}', 'test', 'ops')`, runs[gen], gen, status)
	}
	request(2, "REJECTED")
	request(3, "PENDING_APPROVAL")
	request(4, "APPROVED")
	exec(`UPDATE job_ledger SET state = 'AMBIGUOUS_EFFECT' WHERE job_name = 'owed' AND generation = 5 AND target_key = 't2'`)
	exec(`UPDATE job_ledger SET state = 'IN_FLIGHT' WHERE job_name = 'owed' AND generation = 6 AND target_key = 't3'`)
	// Every generation, the current one (7) too, is well past the 90 days' retention.
	exec(`UPDATE job_ledger SET updated_at = now() - interval '500 days' WHERE job_name = 'owed'`)
	b.waitStatus(mustStart(t, r, runner.StartParams{Job: runner.MaintenanceJobName}), bt.StatusSucceeded)

	for gen, want := range map[int]int{2: 0, 3: 3, 4: 3, 5: 3, 6: 3, 7: 3} {
		if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'owed' AND generation = $1`, gen); n != want {
			t.Errorf("generation %d: %d ledger rows left, want %d", gen, n, want)
		}
	}
}

// Each table has its own period, by the database clock, with the defaults: runs 90 days,
// run errors and schedule events 30, call statistics 7, the audit log 400 (alarm episodes and
// test deliveries too). A job's last run,
// and the last run of a generation the ledger still holds, stay however old.
func TestRetentionPeriodsPerTable(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job := newItemsJob("hist", 2)
	r := b.runner(nil, job)
	var runs []int64 // generations 2..6
	for range 5 {
		id := mustStart(t, r, runner.StartParams{Job: "hist", Mode: bt.ModeRestart})
		b.waitStatus(id, bt.StatusSucceeded)
		runs = append(runs, id)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := b.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	ended := func(id int64, days int) {
		exec(`UPDATE job_runs SET finished_at = now() - make_interval(days => $2) WHERE id = $1`, id, days)
	}
	// Generations 2, 3 and 5 are past the ledger's retention; 4 is not.
	exec(`UPDATE job_ledger SET updated_at = now() - interval '91 days' WHERE job_name = 'hist' AND generation IN (2, 3, 5)`)
	ended(runs[0], 91)  // goes
	ended(runs[1], 89)  // stays: within 90 days
	ended(runs[2], 91)  // stays: the last run of generation 4, which the ledger still holds
	ended(runs[3], 91)  // goes
	ended(runs[4], 500) // stays: the job's last run
	for i, days := range []int{31, 29} {
		exec(`INSERT INTO job_run_errors (run_id, item_key, failure_class, message, created_at)
			VALUES ($1, $2, 'TRANSIENT', 'HTTP 503', now() - make_interval(days => $3))`, runs[4], fmt.Sprintf("e%d", i), days)
		exec(`INSERT INTO job_schedule_events (job_name, scheduled_for, outcome, instance, detail, created_at)
			VALUES ('hist', now(), 'SKIPPED_RUNNING', 'test', $1, now() - make_interval(days => $2))`, fmt.Sprintf("e%d", i), days)
	}
	for _, days := range []int{8, 6} {
		exec(`INSERT INTO job_call_stats (job_name, minute, calls) VALUES ('hist', date_trunc('minute', now()) - make_interval(days => $1), 1)`, days)
	}
	for _, days := range []int{401, 399} {
		exec(`INSERT INTO audit_log (actor, action, target, outcome, created_at) VALUES ('ops', 'test', $1, 'ok', now() - make_interval(days => $2))`,
			fmt.Sprintf("aged:%d", days), days)
		exec(`INSERT INTO alert_history (alert_key, kind, severity, job_name, message, value, since, fired_at, resolved_at)
			VALUES ($1, 'TARGET_RETRIED', 'WARNING', 'hist', 'm', 1, now(), now() - make_interval(days => $2 + 1), now() - make_interval(days => $2))`,
			fmt.Sprintf("aged:%d", days), days)
	}
	// An active episode is kept however old.
	exec(`INSERT INTO alert_history (alert_key, kind, severity, job_name, message, value, since, fired_at)
		VALUES ('active', 'TARGET_RETRIED', 'WARNING', 'hist', 'm', 1, now(), now() - interval '500 days')`)
	// Test deliveries belong to no episode: they go by their own age once no longer pending.
	exec(`INSERT INTO notification_channels (name, kind, url) VALUES ('ops-hook', 'WEBHOOK', 'https://hooks.example/baton')`)
	for _, d := range []struct {
		key, status string
		days        int
	}{{"test:401", "SENT", 401}, {"test:401-failed", "FAILED", 401}, {"test:399", "SENT", 399}, {"test:pending", "PENDING", 500}} {
		// Not due for a day: the runner's notifier leaves the pending one alone.
		exec(`INSERT INTO notification_outbox (channel_id, kind, alert_key, payload, status, created_at, next_attempt_at)
			SELECT id, 'TEST', $1, '{}', $2, now() - make_interval(days => $3), now() + interval '1 day' FROM notification_channels WHERE name = 'ops-hook'`,
			d.key, d.status, d.days)
	}
	b.waitStatus(mustStart(t, r, runner.StartParams{Job: runner.MaintenanceJobName}), bt.StatusSucceeded)

	for i, want := range []int{0, 1, 1, 0, 1} {
		if n := b.count(`SELECT count(*) FROM job_runs WHERE id = $1`, runs[i]); n != want {
			t.Errorf("run %d (generation %d): %d rows, want %d", runs[i], i+2, n, want)
		}
	}
	for _, c := range []struct {
		what, sql string
		want      int
	}{
		{"run errors", `SELECT count(*) FROM job_run_errors WHERE item_key = 'e1'`, 1},
		{"run errors older than 30 days", `SELECT count(*) FROM job_run_errors WHERE item_key = 'e0'`, 0},
		{"schedule events", `SELECT count(*) FROM job_schedule_events WHERE detail = 'e1'`, 1},
		{"schedule events older than 30 days", `SELECT count(*) FROM job_schedule_events WHERE detail = 'e0'`, 0},
		{"call stats", `SELECT count(*) FROM job_call_stats WHERE job_name = 'hist' AND minute > now() - interval '7 days' AND calls = 1`, 1},
		{"call stats older than 7 days", `SELECT count(*) FROM job_call_stats WHERE job_name = 'hist' AND minute < now() - interval '7 days'`, 0},
		{"audit rows", `SELECT count(*) FROM audit_log WHERE target = 'aged:399'`, 1},
		{"audit rows older than 400 days", `SELECT count(*) FROM audit_log WHERE target = 'aged:401'`, 0},
		{"alarm episodes", `SELECT count(*) FROM alert_history WHERE alert_key = 'aged:399'`, 1},
		{"alarm episodes resolved over 400 days ago", `SELECT count(*) FROM alert_history WHERE alert_key = 'aged:401'`, 0},
		{"an active alarm episode", `SELECT count(*) FROM alert_history WHERE alert_key = 'active'`, 1},
		{"test deliveries", `SELECT count(*) FROM notification_outbox WHERE alert_key = 'test:399'`, 1},
		{"test deliveries sent or failed over 400 days ago", `SELECT count(*) FROM notification_outbox WHERE alert_key LIKE 'test:401%'`, 0},
		{"a pending test delivery", `SELECT count(*) FROM notification_outbox WHERE alert_key = 'test:pending'`, 1},
	} {
		if n := b.count(c.sql); n != c.want {
			t.Errorf("%s: %d rows, want %d", c.what, n, c.want)
		}
	}
}

// Runs that resumed one another go together once nothing keeps the last of them: the chain's
// references never make the delete fail, and while the chain's generation is held, all of it
// stays.
func TestRetentionPrunesResumeChains(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job := newItemsJob("chain", 2)
	r := b.runner(nil, job)
	var chain []int64
	for _, mode := range []bt.Mode{bt.ModeRestart, bt.ModeResume, bt.ModeResume} {
		id := mustStart(t, r, runner.StartParams{Job: "chain", Mode: mode})
		b.waitStatus(id, bt.StatusSucceeded)
		chain = append(chain, id)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE id = ANY($1) AND resumed_from IS NOT NULL`, chain); n != 2 {
		t.Fatalf("%d runs of the chain resumed from another, want 2", n)
	}
	last := mustStart(t, r, runner.StartParams{Job: "chain", Mode: bt.ModeRestart})
	b.waitStatus(last, bt.StatusSucceeded)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := b.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE job_runs SET finished_at = now() - interval '500 days' WHERE job_name = 'chain'`)
	maintain := func() {
		t.Helper()
		if rec := b.waitStatus(mustStart(t, r, runner.StartParams{Job: runner.MaintenanceJobName}), bt.StatusSucceeded, bt.StatusFailed); rec.Status != bt.StatusSucceeded {
			t.Fatalf("maintenance run %s: %s", rec.Status, rec.Message)
		}
	}
	// The chain's generation is still held: the chain stays.
	maintain()
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'chain'`); n != 4 {
		t.Fatalf("%d runs left while the chain's generation is held, want 4", n)
	}
	// Its ledger expires: the chain goes whole, the job's last run stays.
	exec(`UPDATE job_ledger SET updated_at = now() - interval '500 days' WHERE job_name = 'chain' AND generation = 2`)
	maintain()
	if n := b.count(`SELECT count(*) FROM job_runs WHERE id = ANY($1)`, chain); n != 0 {
		t.Fatalf("%d runs of the expired chain left, want 0", n)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE id = $1`, last); n != 1 {
		t.Fatalf("the job's last run was deleted")
	}
}

// The periods come from Config.Retention: a negative one keeps a table's rows forever.
func TestRetentionConfiguredPeriods(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r := b.runner(func(c *runner.Config) {
		c.Retention = runner.Retention{AuditLog: 10 * 24 * time.Hour, ScheduleEvents: -1}
	},
		newItemsJob("ev", 1))
	for _, days := range []int{11, 9} {
		if _, err := b.Pool.Exec(ctx, `INSERT INTO audit_log (actor, action, target, outcome, created_at) VALUES ('ops', 'test', $1, 'ok', now() - make_interval(days => $2))`,
			fmt.Sprintf("aged:%d", days), days); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_schedule_events (job_name, scheduled_for, outcome, instance, created_at)
		VALUES ('ev', now(), 'SKIPPED_RUNNING', 'test', now() - interval '10 years')`); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(mustStart(t, r, runner.StartParams{Job: runner.MaintenanceJobName}), bt.StatusSucceeded)
	if n := b.count(`SELECT count(*) FROM audit_log WHERE target = 'aged:11'`); n != 0 {
		t.Errorf("audit row older than the configured 10 days kept")
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE target = 'aged:9'`); n != 1 {
		t.Errorf("audit row within the configured 10 days deleted")
	}
	if n := b.count(`SELECT count(*) FROM job_schedule_events`); n != 1 {
		t.Errorf("schedule events kept forever: %d rows, want 1", n)
	}
}
