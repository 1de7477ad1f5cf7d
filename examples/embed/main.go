// Command embed shows Baton as a library: a program of its own registers its own job and
// serves it with Baton's scheduler, workers, GraphQL API and console.
//
//	DATABASE_URL=postgres://postgres@127.0.0.1:5432/baton REDIS_URL=redis://127.0.0.1:6379/0 \
//	  go run ./examples/embed
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

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server"
)

// greeter "sends" a greeting to each of 50 customers, one item each, resuming after its
// checkpoint. Its outside call is marked External, so the runner commits an intent before it
// and the idempotency key travels with it.
type greeter struct{}

func (greeter) Info() runner.JobInfo {
	return runner.JobInfo{
		Name:        "greet-customers",
		Description: "Sends a greeting to every customer (example job).",
		Cron:        "0 */5 * * * *", // every five minutes, six fields: seconds first
		Timezone:    "Europe/Berlin",
		Lease:       30 * time.Second,
		Risk:        runner.RiskLevel("LOW"),
		Version:     "1",
	}
}

func (greeter) Run(ctx context.Context, run *runner.Run) error {
	start := 1
	if cp := run.Checkpoint(); cp != "" {
		n, err := strconv.Atoi(cp)
		if err != nil {
			return fmt.Errorf("bad checkpoint %q: %w", cp, err)
		}
		start = n + 1
	}
	const customers = 50
	if err := run.SetTotal(ctx, customers); err != nil {
		return err
	}
	for i := start; i <= customers; i++ {
		item := runner.Item{Target: fmt.Sprintf("customer:%d", i), Step: "greet", Checkpoint: strconv.Itoa(i), External: true}
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			// Call the outside system here, passing a.IdempotencyKey; honour ctx.
			select {
			case <-ctx.Done():
				return runner.Transient(ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
			a.SetEffectRef("greeting-" + a.IdempotencyKey)
			// The job's own bookkeeping commits with the item's result, or not at all.
			a.Tx(func(ctx context.Context, tx pgx.Tx) error { return nil })
			return nil
		})
		if err != nil {
			return err // asked to stop (cancel, pause, shutdown) or lease lost
		}
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := server.Serve(ctx, server.Config{
		DatabaseURL: envOr("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/baton?sslmode=disable"),
		RedisURL:    envOr("REDIS_URL", "redis://127.0.0.1:6379/0"),
		Env:         "example",
		Addr:        envOr("BATON_ADDR", ":8090"),
		PoolSize:    2,
		Scheduler:   true,
		Jobs:        []runner.Job{greeter{}},
		// A development convenience: mint an admin token at start and print it.
		AdminTokenName: "example-admin",
		Ready: func(base, token string) {
			fmt.Printf("example up: %s/graphql  token %s\n", base, token)
		},
	})
	if err != nil {
		slog.Error("serve", "err", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
