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
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/demo"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	slog.SetDefault(log)
	if err := run(ctx, log); err != nil {
		log.Error("stormnode", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	n, err := envInt("STORM_JOBS", 10)
	if err != nil {
		return err
	}
	work, err := envDuration("STORM_WORK", 20*time.Millisecond)
	if err != nil {
		return err
	}
	slow, err := envDuration("STORM_SLOW_WORK", work)
	if err != nil {
		return err
	}
	spread, err := envDuration("STORM_WORK_SPREAD", 0)
	if err != nil {
		return err
	}
	pool, err := envInt("BATON_POOL_SIZE", 16)
	if err != nil {
		return err
	}
	poll, err := envDuration("BATON_POLL_INTERVAL", 10*time.Second)
	if err != nil {
		return err
	}
	lease, err := envDuration("BATON_LEASE", 30*time.Second)
	if err != nil {
		return err
	}
	shutdown, err := envDuration("BATON_SHUTDOWN_TIMEOUT", 30*time.Second)
	if err != nil {
		return err
	}
	jobs := make([]runner.Job, 0, n)
	for i := range n {
		w := work + time.Duration(i)*spread
		if i == 0 {
			w = slow
		}
		jobs = append(jobs, stormJob(fmt.Sprintf("storm-%03d", i), w))
	}
	o := server.Options{
		DatabaseURL:     os.Getenv("DATABASE_URL"),
		RedisURL:        os.Getenv("REDIS_URL"),
		Env:             os.Getenv("BATON_ENV"),
		Addr:            os.Getenv("BATON_ADDR"),
		Instance:        os.Getenv("BATON_INSTANCE"),
		PoolSize:        pool,
		Scheduler:       os.Getenv("BATON_SCHEDULER") != "false",
		PollInterval:    poll,
		Lease:           lease,
		ShutdownTimeout: shutdown,
		Logger:          log,
		Version:         "stormnode",
		Jobs:            jobs,
		Ready: func(base, _ string) {
			fmt.Printf("stormnode up: %s (%d storm jobs)\n", base, n)
		},
	}
	if os.Getenv("STORM_DEMO") == "1" {
		cfg := demo.FastConfig()
		if cfg.Collect.Pages, err = envInt("BATON_DEMO_PAGES", cfg.Collect.Pages); err != nil {
			return err
		}
		if cfg.Collect.PageLatency, err = envDuration("BATON_DEMO_PAGE_LATENCY", cfg.Collect.PageLatency); err != nil {
			return err
		}
		o.JobsFunc = func(p *pgxpool.Pool) ([]runner.Job, error) {
			js, _, err := demo.Setup(ctx, p, cfg)
			return js, err
		}
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

func envInt(key string, def int) (int, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a number >= 0, not %q", key, v)
	}
	return n, nil
}

func envDuration(key string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s must be a duration such as 500ms, not %q", key, v)
	}
	return d, nil
}
