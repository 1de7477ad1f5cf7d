package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// bundle is one test's migrated schema and Redis prefix.
type bundle struct {
	t     *testing.T
	url   string
	pool  *pgxpool.Pool
	redis *redis.Client
	env   string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	url := demoSchema(t)
	rc, env := testenv.Redis(t)
	return &bundle{t: t, url: url, pool: testenv.Pool(t, url), redis: rc, env: env}
}

// demoSchema returns a fresh schema migrated as a demo server migrates it: the product's
// migrations (testenv.Schema), then the demo's own.
func demoSchema(t testing.TB) string {
	t.Helper()
	url := testenv.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Migrate(ctx, url); err != nil {
		t.Fatalf("demo migrations: %v", err)
	}
	return url
}

// runner starts a Runner with jobs registered, running until the test ends.
func (b *bundle) runner(jobs ...runner.Job) *runner.Runner {
	b.t.Helper()
	cfg := runner.Config{
		DB: testenv.Pool(b.t, b.url), Redis: b.redis, Env: b.env, PoolSize: 4,
		PollInterval: 200 * time.Millisecond, DefaultLease: 5 * time.Second, ShutdownTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if testing.Verbose() {
		cfg.Logger = slog.Default()
	}
	r, err := runner.New(cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := r.Register(context.Background(), jobs...); err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	b.t.Cleanup(func() { cancel(); <-done })
	return r
}

func (b *bundle) start(r *runner.Runner, p runner.StartParams) int64 {
	b.t.Helper()
	run, err := r.Start(context.Background(), p)
	if err != nil || run == nil {
		b.t.Fatalf("start %s: run %v, %v", p.Job, run, err)
	}
	return run.ID
}

// waitEnd polls until run id has finished and returns it.
func (b *bundle) waitEnd(r *runner.Runner, id int64) *bt.RunRecord {
	b.t.Helper()
	var last *bt.RunRecord
	testenv.Eventually(b.t, 30*time.Second, fmt.Sprintf("run %d to finish", id), func() bool {
		run, err := r.Store().Run(context.Background(), id)
		if err != nil {
			b.t.Fatal(err)
		}
		last = run
		return !run.Status.Active() && !r.Active(id)
	})
	return last
}

// waitStatus waits for run id to finish with status want.
func (b *bundle) waitStatus(r *runner.Runner, id int64, want bt.RunStatus) *bt.RunRecord {
	b.t.Helper()
	got := b.waitEnd(r, id)
	if got.Status != want {
		b.t.Fatalf("run %d ended %s (%s: %s), want %s", id, got.Status, got.StopReason, got.Message, want)
	}
	return got
}

func (b *bundle) count(sql string, args ...any) int {
	b.t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// ledgerStates counts job's ledger rows by state.
func (b *bundle) ledgerStates(job string) map[string]int {
	b.t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT state, count(*) FROM job_ledger WHERE job_name = $1 GROUP BY state`, job)
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			b.t.Fatal(err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		b.t.Fatal(err)
	}
	return out
}

// runDate is the UTC date, by the database clock, on which run id started.
func (b *bundle) runDate(id int64) string {
	b.t.Helper()
	var d string
	err := b.pool.QueryRow(context.Background(), `SELECT to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM job_runs WHERE id = $1`, id).Scan(&d)
	if err != nil {
		b.t.Fatal(err)
	}
	return d
}
