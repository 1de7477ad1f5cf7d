package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// BenchmarkWriteItem measures one fenced single-item write: the strict path's commit.
func BenchmarkWriteItem(b *testing.B) {
	ctx := context.Background()
	s := postgres.New(testenv.Postgres(b))
	if err := s.EnsureJob(ctx, postgres.JobDefaults{Name: "j", Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90}); err != nil {
		b.Fatal(err)
	}
	run, err := s.InsertRun(ctx, postgres.NewRun{JobName: "j", Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: "b", Instance: "b", Token: "t", LeaseSeconds: 3600})
	if err != nil {
		b.Fatal(err)
	}
	f := postgres.Fence{RunID: run.ID, Token: "t"}
	if _, _, err := s.Activate(ctx, f); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		cp := fmt.Sprint(i)
		w := &postgres.ItemsWrite{JobName: "j", Generation: run.Generation, Delta: postgres.RunDelta{Processed: 1, Succeeded: 1},
			Ledger: []postgres.LedgerWrite{{Target: cp, State: bt.LedgerConfirmed, Attempt: 1, IdempotencyKey: cp, CountInRun: true}}, Checkpoint: &cp}
		if _, _, err := s.WriteItems(ctx, f, w, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}
