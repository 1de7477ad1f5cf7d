package postgres_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// The paired benchmarks measure a runner goal of issue 19 and its baseline in one benchmark,
// on one schema, in turn, so that both sides meet the same table, load and moment; the
// separate benchmarks they stand for run minutes apart in other processes (ADR 5).

// BenchmarkProcessStrictPaired: each iteration runs a strict job of 3,000 no-op items
// (Process, one commit each, as BenchmarkProcessStrict) and as many of the strict path's own
// per-item statements from pgbench on one connection (as BenchmarkPgbenchItemStatement), half
// just before the run and half just after. It reports items/s and statement-tps.
func BenchmarkProcessStrictPaired(b *testing.B) {
	const n = 3000
	tb, run := pairedRunner(b, n, func(ctx context.Context, run *runner.Run) error {
		noop := func(ctx context.Context, a *runner.Attempt) error { return nil }
		for i := range n {
			if err := run.Process(ctx, runner.Item{Target: fmt.Sprint(i), Checkpoint: fmt.Sprint(i)}, noop); err != nil {
				return err
			}
		}
		return nil
	})
	statement := postgres.PgbenchItemStatement(b, tb.URL)
	// The statement's time for k transactions at the tps pgbench reports.
	statementTime := func(k int) time.Duration { return time.Duration(float64(k) / statement(k) * float64(time.Second)) }
	var runTotal, statementTotal time.Duration
	i := 0
	for b.Loop() {
		statementTotal += statementTime(n / 2)
		runTotal += run()
		statementTotal += statementTime(n - n/2)
		i++
	}
	b.ReportMetric(float64(n*i)/runTotal.Seconds(), "items/s")
	b.ReportMetric(float64(n*i)/statementTotal.Seconds(), "statement-tps")
}

// BenchmarkProcessBatchPaired: each iteration runs the batch job of BenchmarkProcessBatch
// (20,000 no-op items, ProcessBatch of 500) and COPYs 20,000 fresh CONFIRMED rows of another
// job into the same job_ledger on one connection in one transaction (BenchmarkCopyLedger's
// COPY), the two in alternating order. It reports items/s and copy-rows/s.
func BenchmarkProcessBatchPaired(b *testing.B) {
	const n, batch = 20000, 500
	tb, run := pairedRunner(b, n, func(ctx context.Context, run *runner.Run) error {
		items := make([]runner.Item, 0, batch)
		for i := range n {
			items = append(items, runner.Item{Target: fmt.Sprint(i), Checkpoint: fmt.Sprint(i)})
			if len(items) == batch || i == n-1 {
				if err := run.ProcessBatch(ctx, items, 8, func(ctx context.Context, _ runner.Item, a *runner.Attempt) error { return nil }); err != nil {
					return err
				}
				items = items[:0]
			}
		}
		return nil
	})
	ctx := context.Background()
	conn, err := tb.Pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	rows := ledgerCopyRows("copy", n)
	gen := int64(0)
	copyRows := func() time.Duration {
		gen++
		for _, row := range rows {
			row[1] = gen
		}
		t0 := time.Now()
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"job_ledger"}, ledgerCopyColumns, pgx.CopyFromRows(rows)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	var runTotal, copyTotal time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			runTotal += run()
			copyTotal += copyRows()
		} else {
			copyTotal += copyRows()
			runTotal += run()
		}
		i++
	}
	b.ReportMetric(float64(n*i)/runTotal.Seconds(), "items/s")
	b.ReportMetric(float64(n*i)/copyTotal.Seconds(), "copy-rows/s")
}

// pairedRunner makes a runner on a fresh schema, as the runner's own benchmarks do, with a job
// "items" that body runs, and returns the schema's bundle and a function that runs the job
// once (RESTART: a new generation), checks it succeeded with n items and returns how long it
// took from Start to its final event.
func pairedRunner(b *testing.B, n int64, body func(context.Context, *runner.Run) error) (*testbundle.Bundle, func() time.Duration) {
	tb := testbundle.New(b, testenv.Schema)
	f := &testbundle.Finals{}
	cfg := tb.BenchConfig()
	cfg.PoolSize, cfg.Events, cfg.DefaultLease = 4, f, 30*time.Second
	r := tb.NewRunner(cfg, runner.NewJob(runner.JobInfo{Name: "items", Lease: time.Minute}, body))
	return tb, func() time.Duration {
		t0 := time.Now()
		started, err := r.Start(context.Background(), runner.StartParams{Job: "items", Mode: bt.ModeRestart})
		if err != nil {
			b.Fatal(err)
		}
		run := f.Wait(b, started.ID)
		d := time.Since(t0)
		for r.Active(started.ID) {
			runtime.Gosched()
		}
		if run.Status != bt.StatusSucceeded || run.Processed != n {
			b.Fatalf("run %s with %d items", run.Status, run.Processed)
		}
		return d
	}
}
