package runner_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// benchRunner makes a runner on a fresh schema for a benchmark, with the sink that signals
// its runs' final events.
func benchRunner(b *testing.B, jobs ...runner.Job) (*runner.Runner, *testbundle.Finals) {
	b.Helper()
	tb := testbundle.New(b, testenv.Schema)
	f := &testbundle.Finals{}
	cfg := tb.BenchConfig()
	cfg.PoolSize, cfg.Events, cfg.DefaultLease = 4, f, 30*time.Second
	return tb.NewRunner(cfg, jobs...), f
}

// BenchmarkStart measures Start — lock, insert, hand-off — on a job that returns at once.
// It reports the p50 and p99 latency of Start itself.
func BenchmarkStart(b *testing.B) {
	job := runner.NewJob(runner.JobInfo{Name: "noop"}, func(context.Context, *runner.Run) error { return nil })
	r, f := benchRunner(b, job)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		started, err := r.Start(context.Background(), runner.StartParams{Job: "noop"})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		id := started.ID
		b.StopTimer()
		f.Wait(b, id)
		for r.Active(id) { // the slot and lock are freed just after the final event
			runtime.Gosched()
		}
		b.StartTimer()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// itemsBench runs one job of n no-op items through Process (strict) or ProcessBatch and
// reports items/s.
func itemsBench(b *testing.B, n int, external bool, batch, parallelism int) {
	job := runner.NewJob(runner.JobInfo{Name: "items", Lease: time.Minute}, func(ctx context.Context, run *runner.Run) error {
		noop := func(ctx context.Context, a *runner.Attempt) error { return nil }
		if batch <= 1 {
			for i := range n {
				if err := run.Process(ctx, runner.Item{Target: fmt.Sprint(i), Checkpoint: fmt.Sprint(i), External: external}, noop); err != nil {
					return err
				}
			}
			return nil
		}
		items := make([]runner.Item, 0, batch)
		for i := range n {
			items = append(items, runner.Item{Target: fmt.Sprint(i), Checkpoint: fmt.Sprint(i), External: external})
			if len(items) == batch || i == n-1 {
				if err := run.ProcessBatch(ctx, items, parallelism, func(ctx context.Context, _ runner.Item, a *runner.Attempt) error { return nil }); err != nil {
					return err
				}
				items = items[:0]
			}
		}
		return nil
	})
	r, f := benchRunner(b, job)
	var total time.Duration
	for b.Loop() {
		t0 := time.Now()
		started, err := r.Start(context.Background(), runner.StartParams{Job: "items", Mode: bt.ModeRestart})
		if err != nil {
			b.Fatal(err)
		}
		id := started.ID
		run := f.Wait(b, id)
		total += time.Since(t0)
		for r.Active(id) {
			runtime.Gosched()
		}
		if run.Status != bt.StatusSucceeded || run.Processed != int64(n) {
			b.Fatalf("run %s with %d items", run.Status, run.Processed)
		}
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "items/s")
}

// BenchmarkProcessStrict: one commit per item (ledger row, counters, checkpoint).
func BenchmarkProcessStrict(b *testing.B) { itemsBench(b, 3000, false, 1, 1) }

// BenchmarkProcessStrictConcurrent: 8 strict runs at once (8 jobs, 8 worker slots), each
// 500 items with one commit per item: how the strict path scales with PostgreSQL's group
// commit, against pgbench's 8-connection INSERT+COMMIT. Reports the items/s of all 8.
func BenchmarkProcessStrictConcurrent(b *testing.B) {
	const runs, n = 8, 500
	jobs := make([]runner.Job, runs)
	for k := range jobs {
		jobs[k] = runner.NewJob(runner.JobInfo{Name: fmt.Sprintf("strict-%d", k), Lease: time.Minute}, func(ctx context.Context, run *runner.Run) error {
			noop := func(ctx context.Context, a *runner.Attempt) error { return nil }
			for i := range n {
				if err := run.Process(ctx, runner.Item{Target: fmt.Sprint(i), Checkpoint: fmt.Sprint(i)}, noop); err != nil {
					return err
				}
			}
			return nil
		})
	}
	tb := testbundle.New(b, testenv.Schema)
	f := &testbundle.Finals{}
	cfg := tb.BenchConfig()
	cfg.PoolSize, cfg.Events, cfg.DefaultLease = runs, f, 30*time.Second
	r := tb.NewRunner(cfg, jobs...)
	var total time.Duration
	for b.Loop() {
		t0 := time.Now()
		ids := make([]int64, runs)
		for k := range ids {
			started, err := r.Start(context.Background(), runner.StartParams{Job: fmt.Sprintf("strict-%d", k), Mode: bt.ModeRestart})
			if err != nil {
				b.Fatal(err)
			}
			ids[k] = started.ID
		}
		for _, id := range ids {
			if run := f.Wait(b, id); run.Status != bt.StatusSucceeded || run.Processed != n {
				b.Fatalf("run %s with %d items", run.Status, run.Processed)
			}
		}
		total += time.Since(t0)
		for _, id := range ids {
			for r.Active(id) {
				runtime.Gosched()
			}
		}
	}
	b.ReportMetric(float64(runs*n*b.N)/total.Seconds(), "items/s")
}

// BenchmarkProcessStrictExternal: an intent commit and a result commit per item.
func BenchmarkProcessStrictExternal(b *testing.B) { itemsBench(b, 2000, true, 1, 1) }

// BenchmarkProcessBatch: 500 items per commit.
func BenchmarkProcessBatch(b *testing.B) { itemsBench(b, 20000, false, 500, 8) }

// BenchmarkProcessBatchExternal: 500 items per intent commit and per result commit.
func BenchmarkProcessBatchExternal(b *testing.B) { itemsBench(b, 20000, true, 500, 8) }
