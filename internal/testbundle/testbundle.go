// Package testbundle gives a test or benchmark of Baton its bundle: a migrated schema of its
// own on the shared PostgreSQL, a Redis key prefix of its own, and the runners it starts on
// them. The packages whose tests start runners (runner, graph, internal/demo) build their own
// bundles on this one and keep their small extras beside their tests; their benchmarks share
// the runner settings, the final-event sink and the process measurements of bench.go.
package testbundle

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
)

// Bundle is one test's (or benchmark's) slice of PostgreSQL and Redis.
type Bundle struct {
	T     testing.TB
	URL   string        // the database URL of the test's schema
	Pool  *pgxpool.Pool // a pool on URL, closed when the test ends
	Redis *redis.Client
	Env   string // the test's Redis key prefix, as runner.Config.Env
}

// Setup marks t parallel and returns its bundle on the schema that schema makes
// (testenv.Schema, or one that migrates further).
func Setup(t *testing.T, schema func(testing.TB) string) *Bundle {
	t.Helper()
	t.Parallel()
	return New(t, schema)
}

// New returns tb's bundle as Setup does, without marking it parallel: a benchmark's.
func New(tb testing.TB, schema func(testing.TB) string) *Bundle {
	tb.Helper()
	url := schema(tb)
	rc, env := testenv.Redis(tb)
	return &Bundle{T: tb, URL: url, Pool: testenv.Pool(tb, url), Redis: rc, Env: env}
}

// Config returns the settings a test runner starts from: the bundle's Redis prefix, four
// workers, a 200ms poll, a 5s lease and a 5s shutdown. DB is left nil for NewRunner to open a
// pool of the runner's own. Logs go nowhere unless the test runs verbose.
func (b *Bundle) Config() runner.Config {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.Default()
	}
	return runner.Config{
		Redis: b.Redis, Env: b.Env, PoolSize: 4,
		PollInterval: 200 * time.Millisecond, DefaultLease: 5 * time.Second, ShutdownTimeout: 5 * time.Second,
		Logger: log,
	}
}

// NewRunner makes a Runner with cfg (a new pool on the bundle's schema when cfg.DB is nil)
// and registers jobs, without running it.
func (b *Bundle) NewRunner(cfg runner.Config, jobs ...runner.Job) *runner.Runner {
	b.T.Helper()
	if cfg.DB == nil {
		cfg.DB = testenv.Pool(b.T, b.URL)
	}
	r, err := runner.New(cfg)
	if err != nil {
		b.T.Fatal(err)
	}
	if err := r.Register(context.Background(), jobs...); err != nil {
		b.T.Fatal(err)
	}
	return r
}

// Runner makes a Runner as NewRunner does and runs it until the test ends.
func (b *Bundle) Runner(cfg runner.Config, jobs ...runner.Job) *runner.Runner {
	b.T.Helper()
	r := b.NewRunner(cfg, jobs...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	b.T.Cleanup(func() { cancel(); <-done })
	return r
}

// Count returns the number that sql, a query of one integer, reads through pool.
func Count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
