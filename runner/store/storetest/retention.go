package storetest

import (
	"context"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Retention's deletes are fenced on the maintenance run's lease: a fence with another token,
// or one whose lease has run out, deletes nothing; the live fence then deletes what is due.
func testRetentionDeletesAreFenced(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	pool := s.Pool
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	count := func(sql string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, name := range []string{"j", "maint"} {
		if err := s.EnsureJobs(ctx, []store.JobDefaults{{Name: name, Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90}}); err != nil {
			t.Fatal(err)
		}
	}
	// Generation 1 of j expired long ago; j is at generation 2.
	exec(`UPDATE job_settings SET current_generation = 2 WHERE name = 'j'`)
	exec(`INSERT INTO job_ledger (job_name, generation, target_key, state, idempotency_key, run_id, updated_at)
		VALUES ('j', 1, 'a', 'CONFIRMED', 'k1', 0, now() - interval '1 year'), ('j', 1, 'b', 'TRANSIENT', 'k2', 0, now() - interval '1 year')`)
	exec(`INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n) VALUES ('j', 1, 0, 'CONFIRMED', 1), ('j', 1, 0, 'TRANSIENT', 1)`)
	exec(`INSERT INTO audit_log (actor, action, target, outcome, created_at) VALUES ('ops', 'test', 'x', 'ok', now() - interval '2 years')`)

	run, err := s.InsertRun(ctx, store.NewRun{JobName: "maint", Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: "t", Instance: "t", Token: "tok", LeaseSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	live := store.Fence{RunID: run.ID, Token: "tok"}
	if _, _, err := s.Activate(ctx, live); err != nil {
		t.Fatal(err)
	}
	state := func() [3]int {
		return [3]int{count(`SELECT count(*) FROM job_ledger WHERE job_name = 'j'`), count(`SELECT count(*) FROM job_ledger_counts WHERE job_name = 'j'`),
			count(`SELECT count(*) FROM audit_log`)}
	}
	stale := func(what string, f store.Fence) {
		t.Helper()
		if n, err := s.PruneLedger(ctx, f, "j"); bt.CodeOf(err) != bt.CodeLeaseLost || n != 0 {
			t.Fatalf("%s: PruneLedger deleted %d: %v, want 0 and LEASE_LOST", what, n, err)
		}
		if n, err := s.Prune(ctx, f, store.PruneAuditLog, "", 400*24*time.Hour, 100); bt.CodeOf(err) != bt.CodeLeaseLost || n != 0 {
			t.Fatalf("%s: Prune(audit_log) deleted %d: %v, want 0 and LEASE_LOST", what, n, err)
		}
		if got := state(); got != [3]int{2, 2, 1} {
			t.Fatalf("%s: ledger rows, counters, audit rows %v, want [2 2 1] untouched", what, got)
		}
	}
	stale("another token", store.Fence{RunID: run.ID, Token: "other"})
	exec(`UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, run.ID)
	stale("lease run out", live)

	exec(`UPDATE job_runs SET lease_until = now() + interval '1 minute' WHERE id = $1`, run.ID)
	if n, err := s.PruneLedger(ctx, live, "j"); err != nil || n != 2 {
		t.Fatalf("PruneLedger with the live fence: %d, %v; want 2 rows", n, err)
	}
	if n, err := s.Prune(ctx, live, store.PruneAuditLog, "", 400*24*time.Hour, 100); err != nil || n != 1 {
		t.Fatalf("Prune(audit_log) with the live fence: %d, %v; want 1 row", n, err)
	}
	if got := state(); got != [3]int{0, 0, 0} {
		t.Fatalf("after the live prune: %v, want [0 0 0]", got)
	}
	if _, err := s.Prune(ctx, live, "job_settings", "j", time.Hour, 100); bt.CodeOf(err) != bt.CodeInvalidInput {
		t.Fatalf("prune of a table retention does not know: %v, want INVALID_INPUT", err)
	}
}
