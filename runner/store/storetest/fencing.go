package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// testEndedRunIsFenced makes every fenced write of a run under a fence that no longer holds —
// another token, a lease run out by the database clock, a run that has ended — and checks that
// each is refused with LEASE_LOST and that nothing of any of them landed: not the run's
// counters, total, checkpoint or status, no ledger row, counter, error row or call statistic,
// and no retention delete.
func testEndedRunIsFenced(t *testing.T, open Open) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fence func(t *testing.T, s DB, f store.Fence) store.Fence
	}{
		{"another token", func(_ *testing.T, _ DB, f store.Fence) store.Fence {
			return store.Fence{RunID: f.RunID, Token: "other"}
		}},
		{"lease run out", func(t *testing.T, s DB, f store.Fence) store.Fence {
			exec(t, s, `UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, f.RunID)
			return f
		}},
		{"run ended", func(t *testing.T, s DB, f store.Fence) store.Fence {
			if _, err := s.Finish(context.Background(), f, bt.StatusSucceeded, "", "done"); err != nil {
				t.Fatal(err)
			}
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			live, gen := RunningRun(t, s.Store, 60)
			if err := s.Audit(ctx, store.AuditRecord{Actor: "t", Action: "seed"}); err != nil {
				t.Fatal(err)
			}
			f := tc.fence(t, s, live)
			before := fencedState(t, s, f.RunID)
			cp := "cp-1"
			item := func(targets ...string) *store.ItemsWrite {
				w := &store.ItemsWrite{JobName: "j", Generation: gen, Delta: store.RunDelta{Processed: len(targets), Failed: len(targets)},
					Ledger: ledgerWrites(bt.LedgerValidationRejected, true, targets...), Checkpoint: &cp}
				for i := range w.Ledger {
					w.Ledger[i].ErrorClass, w.Ledger[i].ErrorMessage = "VALIDATION_REJECTED", "no"
				}
				return w
			}
			for name, write := range map[string]func() error{
				"Renew":    func() error { _, _, err := s.Renew(ctx, f); return err },
				"Poll":     func() error { _, _, err := s.Poll(ctx, f); return err },
				"SetTotal": func() error { _, _, err := s.SetTotal(ctx, f, 99); return err },
				"WriteItems/single": func() error {
					_, _, err := s.WriteItems(ctx, f, item("a"), nil)
					return err
				},
				"WriteItems/batch": func() error {
					_, _, err := s.WriteItems(ctx, f, item("b", "c"), nil)
					return err
				},
				"WriteItems/bounded": func() error {
					w := item("d")
					w.Lease = time.Minute
					_, _, err := s.WriteItems(ctx, f, w, nil)
					return err
				},
				"AddCallStats": func() error {
					_, err := s.AddCallStats(ctx, f, []store.CallCounts{{Calls: 3, Downstream: 1}}, 0)
					return err
				},
				"Prune":  func() error { _, err := s.Prune(ctx, f, store.PruneAuditLog, "", time.Nanosecond, 10); return err },
				"Finish": func() error { _, err := s.Finish(ctx, f, bt.StatusFailed, "", "again"); return err },
			} {
				if err := write(); !errors.Is(err, bt.ErrLeaseLost) {
					t.Errorf("%s under a fence that no longer holds returned %v, want a lost lease", name, err)
				}
			}
			if err := s.FlagInputChanged(ctx, f, "j", gen, []store.TargetStep{{Target: "a"}}); err != nil {
				t.Errorf("FlagInputChanged: %v", err)
			}
			if after := fencedState(t, s, f.RunID); after != before {
				t.Fatalf("refused writes changed the database:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// fencedState sums up what a run's fenced writes could change.
func fencedState(t *testing.T, s DB, runID int64) string {
	t.Helper()
	var out string
	err := s.Pool.QueryRow(context.Background(), `SELECT format('run %s total %s processed %s failed %s checkpoint %s heartbeat %s lease %s; ledger %s counters %s errors %s calls %s audit %s',
			r.status, r.total, r.processed, r.failed, r.checkpoint, r.heartbeat_at, r.lease_until,
			(SELECT count(*) FROM job_ledger), (SELECT COALESCE(sum(abs(n)), 0) FROM job_ledger_counts),
			(SELECT count(*) FROM job_run_errors), (SELECT count(*) FROM job_call_stats), (SELECT count(*) FROM audit_log))
		FROM job_runs r WHERE r.id = $1`, runID).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// exec runs sql on s's database.
func exec(t *testing.T, s DB, sql string, args ...any) {
	t.Helper()
	if _, err := s.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}
