// Command river measures River (github.com/riverqueue/river) working no-op jobs on the same
// PostgreSQL that Baton's benchmarks use, as the side-by-side baseline for Baton's batch path
// (issue 3, BENCHMARKS.md).
//
// It creates a schema of its own, runs River's migrations there (rivermigrate), and for each
// repetition: empties river_job, inserts -jobs no-op jobs with InsertManyFast (COPY) in batches
// of 5,000, creates a client tuned the way River's own `river bench` tunes it (FetchCooldown
// 2 ms, FetchPollInterval 20 ms, MaxWorkers 2,000 on the default queue), starts it, and times
// from just before Client.Start until the last job's completion event — the completion event is
// sent after River's completer has marked the job completed in the database, so the clock stops
// when every job is durably done, not when the last worker returned. The schema is dropped at
// the end.
//
// One untimed warm-up repetition (-warmup) comes first: the first client after migrating is
// markedly slower, and leaving it out makes River's figure the harder one to beat.
//
// Output is one line in Go benchmark format, so the report generator reads it like any other
// benchmark:
//
//	BenchmarkRiverNoop/jobs=20000  3  <ns per rep> ns/op  <jobs/s> jobs/s
//
// jobs/s is all jobs over all timed periods (like testing.B's items/s figures). Per-repetition
// figures go to stderr.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct {
	Num int `json:"num"`
}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (*noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func main() {
	dbURL := flag.String("url", envOr("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL URL")
	jobs := flag.Int("jobs", 20000, "jobs inserted and worked per repetition")
	reps := flag.Int("reps", 3, "timed repetitions (a fresh client each)")
	warmup := flag.Int("warmup", 1, "untimed repetitions first (the first client after migrating is markedly slower)")
	maxWorkers := flag.Int("max-workers", 2000, "MaxWorkers of the default queue")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up on a repetition after this long")
	flag.Parse()
	if err := run(*dbURL, *jobs, *warmup, *reps, *maxWorkers, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(dbURL string, jobs, warmup, reps, maxWorkers int, timeout time.Duration) error {
	if jobs < 1 || reps < 1 || warmup < 0 {
		return errors.New("-jobs and -reps must be positive, -warmup not negative")
	}
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "river_bench_" + hex.EncodeToString(b)

	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Exec(c, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, "river bench: drop schema:", err)
		}
	}()

	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)

	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quietLogger()})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	var total time.Duration
	for rep := 1 - warmup; rep <= reps; rep++ {
		d, err := once(ctx, pool, driver, jobs, maxWorkers, timeout)
		if err != nil {
			return fmt.Errorf("repetition %d: %w", rep, err)
		}
		what := fmt.Sprintf("rep %d", rep)
		if rep < 1 {
			what = "warm-up (not counted)"
		} else {
			total += d
		}
		fmt.Fprintf(os.Stderr, "river: %s: %d jobs in %s = %.0f jobs/s\n", what, jobs, d.Round(time.Millisecond), float64(jobs)/d.Seconds())
	}
	fmt.Printf("BenchmarkRiverNoop/jobs=%d \t%d\t%d ns/op\t%.1f jobs/s\n",
		jobs, reps, total.Nanoseconds()/int64(reps), float64(jobs*reps)/total.Seconds())
	return nil
}

func once(ctx context.Context, pool *pgxpool.Pool, driver *riverpgxv5.Driver, jobs, maxWorkers int, timeout time.Duration) (time.Duration, error) {
	// A clean table for every repetition, as River's own benchmark does.
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return 0, err
	}
	if _, err := pool.Exec(ctx, "VACUUM FULL river_job"); err != nil {
		return 0, err
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            quietLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers:           workers,
	})
	if err != nil {
		return 0, err
	}

	const batch = 5000
	params := make([]river.InsertManyParams, 0, batch)
	for i := 0; i < jobs; i++ {
		params = append(params, river.InsertManyParams{Args: noopArgs{Num: i}})
		if len(params) == batch || i == jobs-1 {
			if _, err := client.InsertManyFast(ctx, params); err != nil {
				return 0, fmt.Errorf("insert: %w", err)
			}
			params = params[:0]
		}
	}

	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: jobs + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer cancelSub()

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	if err := client.Start(runCtx); err != nil {
		return 0, fmt.Errorf("start: %w", err)
	}
	defer func() {
		stopCtx, c := context.WithTimeout(context.Background(), 30*time.Second)
		defer c()
		_ = client.Stop(stopCtx)
	}()

	var last time.Time
	for done := 0; done < jobs; {
		select {
		case ev := <-events:
			if ev == nil {
				return 0, errors.New("subscription closed")
			}
			if ev.Kind != river.EventKindJobCompleted {
				return 0, fmt.Errorf("job %d: unexpected event %s", ev.Job.ID, ev.Kind)
			}
			done++
			last = time.Now()
		case <-runCtx.Done():
			return 0, fmt.Errorf("only %d of %d jobs completed within %s", done, jobs, timeout)
		}
	}
	elapsed := last.Sub(start)

	var completed int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&completed); err != nil {
		return 0, err
	}
	if completed != jobs {
		return 0, fmt.Errorf("%d jobs completed in the table, want %d", completed, jobs)
	}
	return elapsed, nil
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
