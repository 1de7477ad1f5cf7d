package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
)

// historyJobs is how many jobs the history data set spreads its runs over.
const historyJobs = 10

// historyWindows are the job page's windows: their name in benchmark names, bucket width and
// count (as runner.HistoryWindow.Buckets gives them).
var historyWindows = []struct {
	name  string
	width time.Duration
	n     int
}{{"24h", time.Hour, 24}, {"7d", 6 * time.Hour, 28}, {"30d", 24 * time.Hour, 30}}

// loadHistoryTables loads runs ended runs across historyJobs jobs ("hist-00" …), evenly over
// the last 40 days by the database clock (with 100k runs: a run of each job every 5.8
// minutes, 7,500 runs of a job in a 30-day window), 5 % of them FAILED with 5 error rows each
// and every 7th other run with 2, in four failure classes; and a row of call statistics per job
// and minute of those 40 days (576,000 rows). Then ANALYZE, as autovacuum would soon.
func loadHistoryTables(tb testing.TB, pool *pgxpool.Pool, runs int) {
	tb.Helper()
	ctx := context.Background()
	steps := []string{
		fmt.Sprintf(`INSERT INTO job_settings (name) SELECT 'hist-' || lpad(j::text, 2, '0') FROM generate_series(0, %d) j`, historyJobs-1),
		fmt.Sprintf(`INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds,
				lease_until, generation, started_at, activated_at, finished_at, processed, failed)
			SELECT 'hist-' || lpad((g %% %[1]d)::text, 2, '0'),
				CASE WHEN k %% 20 = 0 THEN 'FAILED' WHEN k %% 53 = 0 THEN 'CANCELLED' WHEN k %% 97 = 0 THEN 'PAUSED' ELSE 'SUCCEEDED' END,
				'SCHEDULED', 'RESUME', 'scheduler', 'i', md5(g::text), 30, f, 1,
				f - make_interval(secs => 30 + g %% 570), f - make_interval(secs => 25 + g %% 570), f,
				100 + g %% 900, CASE WHEN k %% 20 = 0 THEN 5 ELSE 0 END
			FROM (SELECT g, g / %[1]d AS k, statement_timestamp() - make_interval(secs => (g / %[1]d) * 3456000.0 / %[2]d) AS f
				FROM generate_series(0, %[3]d) g) s`, historyJobs, runs/historyJobs, runs-1),
		`INSERT INTO job_run_errors (run_id, item_key, failure_class, message)
			SELECT r.id, 'k' || e, (ARRAY['TRANSIENT', 'VALIDATION_REJECTED', 'CONFLICT', 'AMBIGUOUS_EFFECT'])[1 + (r.id + e) % 4], 'boom'
			FROM job_runs r CROSS JOIN LATERAL generate_series(1, CASE WHEN r.status = 'FAILED' THEN 5 WHEN r.id % 7 = 0 THEN 2 ELSE 0 END) e`,
		fmt.Sprintf(`INSERT INTO job_call_stats (job_name, minute, calls, downstream_errors, rejects)
			SELECT 'hist-' || lpad(j::text, 2, '0'), date_trunc('minute', statement_timestamp()) - make_interval(mins => m), 50 + m %% 50, m %% 7, m %% 3
			FROM generate_series(0, %d) j, generate_series(0, 40 * 1440 - 1) m`, historyJobs-1),
		`ANALYZE job_settings, job_runs, job_run_errors, job_call_stats`,
	}
	for _, sql := range steps {
		if _, err := pool.Exec(ctx, sql); err != nil {
			tb.Fatalf("load: %v\n%s", err, sql)
		}
	}
}

// historyQueryAt is the query of window w ending with the bucket that holds now, as
// runner.JobService.History makes it.
func historyQueryAt(job string, now time.Time, width time.Duration, n int) store.HistoryQuery {
	to := now.UTC().Truncate(width).Add(width)
	return store.HistoryQuery{Job: job, Start: to.Add(-time.Duration(n) * width), Width: width, Buckets: n}
}

// BenchmarkJobHistory times the history of one job over each window of the job page, with
// 100k runs in the table (10 jobs, 40 days; 7,500 of the job's runs in the 30-day window),
// their error rows and 576,000 rows of call statistics: p50-ms and p99-ms of JobHistory (three
// aggregate statements in one read-only transaction), and runs/query, the job's ended runs the
// window holds, which its cost follows.
func BenchmarkJobHistory(b *testing.B) {
	const runs = 100_000
	ctx := context.Background()
	url := testenv.Schema(b)
	pool := testenv.Pool(b, url)
	loadHistoryTables(b, pool, runs)
	s := postgres.New(pool)
	for _, w := range historyWindows {
		b.Run(fmt.Sprintf("runs=%s/window=%s", testenv.CountLabel(runs), w.name), func(b *testing.B) {
			q := historyQueryAt("hist-03", time.Now(), w.width, w.n)
			var ended int64
			run := func() {
				buckets, err := s.JobHistory(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				ended = 0
				for _, h := range buckets {
					for _, n := range h.Runs {
						ended += n
					}
				}
			}
			for range 3 {
				run()
			}
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				run()
				lat = append(lat, time.Since(t0))
			}
			b.ReportMetric(testenv.Millis(testenv.Quantile(lat, 0.5)), "p50-ms")
			b.ReportMetric(testenv.Millis(testenv.Quantile(lat, 0.99)), "p99-ms")
			b.ReportMetric(float64(ended), "runs/query")
		})
	}
}

// TestJobHistoryPlansUseIndexes loads the benchmark's data set (100k runs) and explains each
// history statement of each window as the store runs it (unprepared, with its arguments, on
// the store's own connection): none may scan a big table or the call statistics sequentially,
// the runs must be found by an index condition on finished_at (the window), their error rows
// by one on run_id, and the call statistics by one on minute. With -v it logs each plan with
// its actual times (EXPLAIN ANALYZE), as BENCHMARKS.md quotes them.
func TestJobHistoryPlansUseIndexes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	url := testenv.Schema(t)
	admin := testenv.Pool(t, url)
	loadHistoryTables(t, admin, 100_000)

	rec := &statementRecorder{args: map[string][]any{}}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := postgres.New(pool)

	// Every statement must reach each table it reads through an index condition on these.
	need := map[string][]string{"job_runs": {"finished_at"}, "job_run_errors": {"run_id"}, "job_call_stats": {"minute"}}
	for _, w := range historyWindows {
		rec.begin(w.name)
		for range 7 { // past the sixth execution, when a prepared statement may go generic
			if _, err := s.JobHistory(ctx, historyQueryAt("hist-03", time.Now(), w.width, w.n)); err != nil {
				t.Fatal(err)
			}
		}
		var stmts []string
		for _, sql := range rec.end() {
			if strings.HasPrefix(sql, "SELECT") {
				stmts = append(stmts, sql)
			}
		}
		if len(stmts) != 3 {
			t.Fatalf("%s: %d statements, want 3: %v", w.name, len(stmts), stmts)
		}
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, sql := range stmts {
			var prepared bool
			if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_prepared_statements WHERE statement = $1)`, sql).Scan(&prepared); err != nil {
				t.Fatal(err)
			}
			if prepared {
				t.Errorf("%s: a prepared statement on the connection, whose plan may go generic:\n%s", w.name, sql)
			}
			args := append([]any{pgx.QueryExecModeExec}, rec.args[sql]...)
			var plan []struct{ Plan planNode }
			if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
				t.Fatalf("%s: explain: %v\n%s", w.name, err, sql)
			}
			dump := func() string { b, _ := json.MarshalIndent(plan[0].Plan, "", " "); return string(b) }
			indexed := map[string]bool{}
			plan[0].Plan.walk(func(p *planNode) {
				if p.NodeType == "Seq Scan" && (bigTables[p.Relation] || p.Relation == "job_call_stats") {
					t.Errorf("%s: sequential scan of %s\n%s\n%s", w.name, p.Relation, sql, dump())
				}
				for _, col := range need[p.Relation] {
					if strings.Contains(p.IndexCond, col) {
						indexed[p.Relation] = true
					}
				}
				// A bitmap scan carries its index condition on its child.
				for _, c := range p.Plans {
					if c.NodeType == "Bitmap Index Scan" && p.Relation != "" {
						for _, col := range need[p.Relation] {
							if strings.Contains(c.IndexCond, col) {
								indexed[p.Relation] = true
							}
						}
					}
				}
			})
			for table := range need {
				if strings.Contains(sql, table) && !indexed[table] {
					t.Errorf("%s: %s is not reached through an index condition on %v\n%s\n%s", w.name, table, need[table], sql, dump())
				}
			}
			if testing.Verbose() {
				rows, err := conn.Query(ctx, "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, SUMMARY ON) "+sql, args...)
				if err != nil {
					t.Fatal(err)
				}
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("window %s:\n%s\n%s", w.name, sql, strings.Join(lines, "\n"))
			}
		}
		conn.Release()
	}
}
