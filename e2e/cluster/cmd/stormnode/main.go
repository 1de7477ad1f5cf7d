// Command stormnode is a Baton instance for the cluster tests' cron storm: it serves through
// package server (like `baton serve`) and registers STORM_JOBS tiny jobs, storm-000,
// storm-001, ..., each firing every second ("* * * * * *"). A run processes one item (held for
// STORM_WORK, default 20ms) so every fire leaves a ledger row behind; STORM_SLOW_WORK, when
// set, is the work of storm-000 instead, so a value over a second makes every other fire of
// it find the job still running (a skipped fire); STORM_WORK_SPREAD adds i times itself to
// the work of storm-i (i >= 1), so runs end at many offsets from the next fire. With
// STORM_DEMO=1 it
// also registers the demo jobs, small (BATON_DEMO_PAGES and BATON_DEMO_PAGE_LATENCY size
// demo-collect).
//
// It reads the same environment as `baton serve`: DATABASE_URL, REDIS_URL, BATON_ENV,
// BATON_ADDR, BATON_INSTANCE, BATON_POOL_SIZE, BATON_SCHEDULER, BATON_POLL_INTERVAL,
// BATON_LEASE, BATON_SHUTDOWN_TIMEOUT. It is a test binary: nothing here is for production.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/e2e/internal/node"
	"github.com/baton-run/baton/internal/demo"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server"
)

func main() { node.Main("stormnode", run) }

func run(ctx context.Context, log *slog.Logger) error {
	var e node.Env
	n := e.Int("STORM_JOBS", 10)
	work := e.Duration("STORM_WORK", 20*time.Millisecond)
	slow := e.Duration("STORM_SLOW_WORK", work)
	spread := e.Duration("STORM_WORK_SPREAD", 0)
	o := e.Options("stormnode", log, node.Defaults{
		PoolSize: 16, PollInterval: 10 * time.Second, Lease: 30 * time.Second, ShutdownTimeout: 30 * time.Second,
	})
	demoCfg := demo.FastConfig()
	if os.Getenv("STORM_DEMO") == "1" {
		demoCfg.Collect.Pages = e.Int("BATON_DEMO_PAGES", demoCfg.Collect.Pages)
		demoCfg.Collect.PageLatency = e.Duration("BATON_DEMO_PAGE_LATENCY", demoCfg.Collect.PageLatency)
		o.JobsFunc = func(p *pgxpool.Pool) ([]runner.Job, error) {
			js, _, err := demo.Setup(ctx, p, demoCfg)
			return js, err
		}
	}
	if e.Err != nil {
		return e.Err
	}
	for i := range n {
		w := work + time.Duration(i)*spread
		if i == 0 {
			w = slow
		}
		o.Jobs = append(o.Jobs, stormJob(fmt.Sprintf("storm-%03d", i), w))
	}
	o.Ready = func(base, _ string) {
		fmt.Printf("stormnode up: %s (%d storm jobs)\n", base, n)
	}
	return server.Serve(ctx, o)
}

// stormJob fires every second and processes one item.
func stormJob(name string, work time.Duration) runner.Job {
	return runner.NewJob(runner.JobInfo{
		Name:           name,
		Description:    "Cluster-test storm job: fires every second, one item per run.",
		Cron:           "* * * * * *",
		Version:        "1",
		StopConditions: []runner.StopCondition{},
	}, func(ctx context.Context, run *runner.Run) error {
		if err := run.SetTotal(ctx, 1); err != nil {
			return err
		}
		item := runner.Item{Target: "fire", Step: "tick", Checkpoint: "done"}
		return run.Process(ctx, item, func(ctx context.Context, _ *runner.Attempt) error {
			t := time.NewTimer(work)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return runner.Transient(ctx.Err())
			case <-t.C:
				return nil
			}
		})
	})
}
