// Command loadnode is a Baton instance for the load tests (e2e/load): it serves through
// package server, as `baton serve` does, with LOAD_JOBS jobs named load-0, load-1, ...
// whose runs walk items as fast as Baton commits them — ProcessBatch of LOAD_BATCH items
// (default 1000) with no-op calls, LOAD_PARALLELISM (default 8) at a time — for LOAD_RUN_FOR
// (default 2m) and then succeed. LOAD_RATE, when set, caps a run's items per second.
//
// Each run walks targets of a new generation when started with mode RESTART, so runs never
// meet each other's ledger rows.
//
// It reads the environment of `baton serve`: DATABASE_URL, REDIS_URL, BATON_ENV, BATON_ADDR,
// BATON_INSTANCE, BATON_POOL_SIZE (default 4), BATON_SCHEDULER (default true),
// BATON_POLL_INTERVAL, BATON_LEASE, BATON_SHUTDOWN_TIMEOUT. It prints "loadnode up: <base URL>"
// once it serves. It is a test binary: nothing here is for production.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/baton-run/baton/e2e/internal/node"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server"
)

func main() { node.Main("loadnode", run) }

func run(ctx context.Context, log *slog.Logger) error {
	var (
		e      node.Env
		jobs   = e.Int("LOAD_JOBS", 3)
		batch  = e.Int("LOAD_BATCH", 1000)
		par    = e.Int("LOAD_PARALLELISM", 8)
		rate   = e.Int("LOAD_RATE", 0)
		runFor = e.Duration("LOAD_RUN_FOR", 2*time.Minute)
		o      = e.Options("loadnode", log, node.Defaults{
			PoolSize: 4, PollInterval: 2 * time.Second, Lease: 30 * time.Second, ShutdownTimeout: 10 * time.Second,
		})
	)
	if e.Err != nil {
		return e.Err
	}
	if batch < 1 {
		return fmt.Errorf("LOAD_BATCH must be at least 1, not %d", batch)
	}
	o.Jobs = make([]runner.Job, jobs)
	for i := range o.Jobs {
		o.Jobs[i] = loadJob(fmt.Sprintf("load-%d", i), runFor, batch, par, rate)
	}
	o.Ready = func(base, _ string) {
		fmt.Printf("loadnode up: %s\n", base)
	}
	return server.Serve(ctx, o)
}

// loadJob walks batches of no-op items until runFor has passed since the run began.
func loadJob(name string, runFor time.Duration, batch, parallelism, rate int) runner.Job {
	return runner.NewJob(runner.JobInfo{
		Name:           name,
		Description:    "Load-test job: batches of no-op items for a fixed time.",
		Version:        "1",
		Lease:          time.Minute,
		Retry:          runner.RetryPolicy{MaxAttempts: 1},
		StopConditions: []runner.StopCondition{},
	}, func(ctx context.Context, run *runner.Run) error {
		start := time.Now()
		items := make([]runner.Item, batch)
		noop := func(context.Context, runner.Item, *runner.Attempt) error { return nil }
		for n := 0; time.Since(start) < runFor; {
			for i := range items {
				key := strconv.Itoa(n + i)
				items[i] = runner.Item{Target: key, Checkpoint: key}
			}
			if err := run.ProcessBatch(ctx, items, parallelism, noop); err != nil {
				return err // asked to stop, or the lease is lost
			}
			n += batch
			if rate > 0 {
				// Pace: the n-th item is due n/rate seconds after the start.
				due := start.Add(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
				select {
				case <-ctx.Done():
					return runner.Transient(ctx.Err())
				case <-time.After(time.Until(due)):
				}
			}
		}
		return nil
	})
}
