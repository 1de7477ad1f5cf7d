package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/runner/internal/maintenance"
	"github.com/baton-run/baton/runner/store"
)

// fakePrune has rows[table] rows due, and deletes up to limit per call.
type fakePrune struct {
	rows  map[store.PruneTable]int64
	calls map[store.PruneTable]int
}

func (f *fakePrune) PruneLedger(context.Context, store.Fence, string) (int64, error) {
	return 7, nil
}

func (f *fakePrune) Prune(_ context.Context, _ store.Fence, table store.PruneTable, _ string, _ time.Duration, limit int) (int64, error) {
	f.calls[table]++
	n := min(f.rows[table], int64(limit))
	f.rows[table] -= n
	return n, nil
}

func TestPruneJobDeletesInBatchesAndKeepsNegativePeriods(t *testing.T) {
	t.Parallel()
	prune := &fakePrune{rows: map[store.PruneTable]int64{store.PruneRuns: 12000, store.PruneRunErrors: 3}, calls: map[store.PruneTable]int{}}
	p := maintenance.Pruner{Store: prune, Periods: maintenance.Retention{CallStats: -1}.WithDefaults()}
	got, err := p.PruneJob(context.Background(), store.Fence{RunID: 1, Token: "t"}, "job")
	if err != nil {
		t.Fatal(err)
	}
	want := "pruned 7 ledger rows, 3 job_run_errors, 0 job_schedule_events, 0 job_call_stats, 12000 job_runs"
	if got != want {
		t.Fatalf("evidence %q, want %q", got, want)
	}
	if prune.calls[store.PruneRuns] != 3 || prune.calls[store.PruneCallStats] != 0 {
		t.Fatalf("prune calls %v: want 3 batches of runs and none of call stats (kept forever)", prune.calls)
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
