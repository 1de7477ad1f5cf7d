package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/runner/internal/maintenance"
	"github.com/baton-run/baton/runner/postgres"
)

// fakePrune has rows[table] rows due, and deletes up to limit per call.
type fakePrune struct {
	rows  map[postgres.PruneTable]int64
	calls map[postgres.PruneTable]int
}

func (f *fakePrune) PruneLedger(context.Context, postgres.Fence, string) (int64, error) {
	return 7, nil
}

func (f *fakePrune) Prune(_ context.Context, _ postgres.Fence, table postgres.PruneTable, _ string, _ time.Duration, limit int) (int64, error) {
	f.calls[table]++
	n := min(f.rows[table], int64(limit))
	f.rows[table] -= n
	return n, nil
}

func TestPruneJobDeletesInBatchesAndKeepsNegativePeriods(t *testing.T) {
	t.Parallel()
	store := &fakePrune{rows: map[postgres.PruneTable]int64{postgres.PruneRuns: 12000, postgres.PruneRunErrors: 3}, calls: map[postgres.PruneTable]int{}}
	p := maintenance.Pruner{Store: store, Periods: maintenance.Retention{CallStats: -1}.WithDefaults()}
	got, err := p.PruneJob(context.Background(), postgres.Fence{RunID: 1, Token: "t"}, "job")
	if err != nil {
		t.Fatal(err)
	}
	want := "pruned 7 ledger rows, 3 job_run_errors, 0 job_schedule_events, 0 job_call_stats, 12000 job_runs"
	if got != want {
		t.Fatalf("evidence %q, want %q", got, want)
	}
	if store.calls[postgres.PruneRuns] != 3 || store.calls[postgres.PruneCallStats] != 0 {
		t.Fatalf("prune calls %v: want 3 batches of runs and none of call stats (kept forever)", store.calls)
	}
}

func TestRetentionDefaults(t *testing.T) {
	t.Parallel()
	r := maintenance.Retention{Runs: time.Hour, AuditLog: -1}.WithDefaults()
	if r.Runs != time.Hour || r.AuditLog != -1 || r.RunErrors != maintenance.DefaultRunErrorRetention ||
		r.ScheduleEvents != maintenance.DefaultScheduleEventRetention || r.CallStats != maintenance.DefaultCallStatsRetention {
		t.Fatalf("retention %+v: set periods kept, zero ones defaulted", r)
	}
}
