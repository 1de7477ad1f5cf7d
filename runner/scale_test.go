package runner_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/migrations"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/runner/postgres"
)

// TestScaleFiresOnce is the short form of the scale simulation (issue 6 item 4): 20 Runner
// instances in one process, each with its own small pgx pool and Redis client, all running the
// scheduler over the same 200 registered jobs; 20 of them get "* * * * * *" for a few seconds.
// Every (job, scheduled_for) may start at most one run or be recorded once as skipped or missed,
// every second of the storm must be one of those, and every storm job must run. The
// figures (idle queries per instance, lateness and missed fires under the storm, at 50 × 1,000)
// come from BenchmarkScaleSimulation.
func TestScaleFiresOnce(t *testing.T) {
	t.Parallel()
	c := newScaleCluster(t, scaleOpts{instances: 20, jobs: 200})
	c.start()
	c.waitScheduled()
	storm := c.storm(20)
	stormFor(t, c, 5*time.Second)
	c.endStorm(storm)
	c.stop()

	res := c.stormResult(storm)
	if res.duplicates != 0 {
		t.Fatalf("%d (job, scheduled_for) pairs started more than one run or were both run and skipped:\n%s",
			res.duplicates, strings.Join(c.duplicateFires(storm), "\n"))
	}
	if res.unaccounted != 0 {
		t.Fatalf("%d fires of the storm neither ran nor were recorded as skipped or missed", res.unaccounted)
	}
	for _, name := range storm {
		if res.perJob[name] == 0 {
			t.Fatalf("storm job %s never ran in the storm (runs per job: %v)", name, res.perJob)
		}
	}
	t.Logf("storm: %d runs, %d skipped, %d missed; lateness p50 %.0f ms, p99 %.0f ms", res.runs, res.skipped, res.missed, res.p50ms, res.p99ms)
}

// stormFor lets the storm run for d by the database clock.
func stormFor(tb testing.TB, c *scaleCluster, d time.Duration) {
	tb.Helper()
	var until time.Time
	if err := c.admin.QueryRow(context.Background(), `SELECT now() + make_interval(secs => $1)`, d.Seconds()).Scan(&until); err != nil {
		tb.Fatal(err)
	}
	testenv.Eventually(tb, d+time.Minute, "the storm to last "+d.String(), func() bool {
		var past bool
		_ = c.admin.QueryRow(context.Background(), `SELECT now() >= $1`, until).Scan(&past)
		return past
	})
}

// scaleOpts shapes a scaleCluster.
type scaleOpts struct {
	instances int
	jobs      int
	// maxConns is each instance's pgx pool size; 0 means 3 (the scheduler's LISTEN connection
	// and two for work).
	maxConns int
	// maxConnections is the private server's max_connections; 0 keeps PostgreSQL's 100.
	maxConnections int
	// slots is each instance's worker pool; 0 means runner's default (4).
	slots int
}

// scaleCluster is many Runner instances in one process, each with its own pgx pool and Redis
// client as separate Baton processes would have, on a private PostgreSQL: each instance holds
// at least two connections (the scheduler's LISTEN and one to work with), which the shared
// server — max_connections 100, used by every other test at the same time — cannot spare for
// dozens of instances. The private server (autovacuum off) also makes its database's
// statistics (pg_stat_database) this cluster's alone.
type scaleCluster struct {
	tb      testing.TB
	o       scaleOpts
	pg      *testenv.PostgresServer
	db      string        // the migrated database's name
	admin   *pgxpool.Pool // the test's own queries: not counted per instance
	stats   *pgxpool.Pool // on another database, so reading statistics adds no transactions to db
	env     string
	names   []string
	runners []*runner.Runner
	queries []*queryCounter
	cancel  context.CancelFunc
	done    sync.WaitGroup
	stopped bool
}

// scaleJobCron is a fire far away (1 January, 00:00): the jobs are registered and scheduled,
// but none fires while the cluster runs.
const scaleJobCron = "0 0 1 1 *"

func newScaleCluster(tb testing.TB, o scaleOpts) *scaleCluster {
	tb.Helper()
	if o.maxConns == 0 {
		o.maxConns = 3
	}
	ctx := context.Background()
	pg := quietPostgres(tb, o.maxConnections)
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE sim"); err != nil {
		tb.Fatal(err)
	}
	_ = conn.Close(ctx)
	if err := migrations.Up(ctx, pg.URL("sim")); err != nil {
		tb.Fatal(err)
	}
	_, env := testenv.Redis(tb)
	c := &scaleCluster{tb: tb, o: o, pg: pg, db: "sim", env: env,
		admin: testenv.Pool(tb, pg.URL("sim")), stats: testenv.Pool(tb, pg.URL("postgres"))}
	for i := range o.jobs {
		c.names = append(c.names, fmt.Sprintf("sim-%04d", i))
	}
	return c
}

// quietPostgres starts a private PostgreSQL whose databases see only their clients'
// transactions: autovacuum is off (its workers visit every database in turn and their
// transactions count in pg_stat_database). maxConnections, if not 0, replaces the default 100.
func quietPostgres(tb testing.TB, maxConnections int) *testenv.PostgresServer {
	tb.Helper()
	ctx := context.Background()
	pg := testenv.PrivatePostgres(tb)
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET autovacuum = off"); err != nil {
		tb.Fatal(err)
	}
	if maxConnections == 0 {
		if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			tb.Fatal(err)
		}
		return pg
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET max_connections = %d", maxConnections)); err != nil {
		tb.Fatal(err)
	}
	_ = conn.Close(ctx)
	pg.Stop(tb) // max_connections takes a restart
	pg.Start(tb)
	return pg
}

// start makes the instances, registers every job on each (concurrently, as instances starting
// together would) and runs them; it returns how long registering took. It stops them when the
// test ends.
func (c *scaleCluster) start() time.Duration {
	tb := c.tb
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	var closers []func()
	// One cleanup, registered before anything can fail: stop the instances first (the LISTEN
	// connections go back to their pools), then close the pools and Redis clients.
	tb.Cleanup(func() {
		c.stop()
		for _, f := range closers {
			f()
		}
	})
	ropt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		tb.Fatal(err)
	}
	ropt.PoolSize = 4
	noop := func(context.Context, *runner.Run) error { return nil }
	var jobs []runner.Job
	for _, n := range c.names {
		jobs = append(jobs, runner.NewJob(runner.JobInfo{Name: n, Cron: scaleJobCron}, noop))
	}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range c.o.instances {
		pcfg, err := pgxpool.ParseConfig(c.pg.URL(c.db))
		if err != nil {
			tb.Fatal(err)
		}
		pcfg.MaxConns = int32(c.o.maxConns)
		q := &queryCounter{}
		pcfg.ConnConfig.Tracer = q
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			tb.Fatal(err)
		}
		rc := redis.NewClient(ropt)
		r, err := runner.New(runner.Config{DB: pool, Redis: rc, Env: c.env, Instance: fmt.Sprintf("sim-%02d", i),
			PoolSize: c.o.slots, Scheduler: true, DefaultLease: 10 * time.Second, ShutdownTimeout: 5 * time.Second, Logger: discard})
		if err != nil {
			tb.Fatal(err)
		}
		c.runners = append(c.runners, r)
		c.queries = append(c.queries, q)
		closers = append(closers, func() { pool.Close(); _ = rc.Close() })
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(c.runners))
	t0 := time.Now()
	for _, r := range c.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Register(ctx, jobs...); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	register := time.Since(t0)
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	for _, r := range c.runners {
		c.done.Add(1)
		go func() { defer c.done.Done(); _ = r.Run(ctx) }()
	}
	return register
}

// stop shuts every instance down and waits for them.
func (c *scaleCluster) stop() {
	if c.stopped || c.cancel == nil {
		return
	}
	c.stopped = true
	c.cancel()
	c.done.Wait()
}

// waitScheduled waits until every job has its next fire computed: the instances' first passes.
func (c *scaleCluster) waitScheduled() {
	c.tb.Helper()
	testenv.Eventually(c.tb, 3*time.Minute, "every job's next fire to be computed", func() bool {
		var n int
		_ = c.admin.QueryRow(context.Background(), `SELECT count(*) FROM job_settings WHERE cron <> '' AND next_scheduled_at IS NULL`).Scan(&n)
		return n == 0
	})
}

// xacts returns the transactions committed and rolled back in the cluster's database so far
// (as the server's statistics have them: a backend reports within about a second).
func (c *scaleCluster) xacts() int64 {
	c.tb.Helper()
	var n int64
	if err := c.stats.QueryRow(context.Background(), `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, c.db).Scan(&n); err != nil {
		c.tb.Fatal(err)
	}
	return n
}

// statements returns the statements all instances have sent so far.
func (c *scaleCluster) statements() int64 {
	var n int64
	for _, q := range c.queries {
		n += q.n.Load()
	}
	return n
}

// storm gives the first n jobs the cron "* * * * * *" in one statement, as an operator
// changing n schedules at once would (UpdateSchedule's effect on each: cron set, next fire
// cleared, schedulers woken), and returns their names.
func (c *scaleCluster) storm(n int) []string {
	c.tb.Helper()
	names := c.names[:n]
	_, err := c.admin.Exec(context.Background(), `
		WITH u AS (
			UPDATE job_settings SET cron = '* * * * * *', next_scheduled_at = NULL, version = version + 1,
				updated_at = now(), updated_by = 'bench'
			WHERE name = ANY($1) RETURNING 1
		) SELECT pg_notify($2, 'storm') FROM (SELECT count(*) FROM u) x`, names, postgres.ScheduleChannel)
	if err != nil {
		c.tb.Fatal(err)
	}
	return names
}

// endStorm disables the storm jobs — no fire is claimed once that commits — and waits until
// their last runs have ended, so that stopping the instances interrupts no start.
func (c *scaleCluster) endStorm(names []string) {
	c.tb.Helper()
	ctx := context.Background()
	var ended time.Time
	err := c.admin.QueryRow(ctx, `
		WITH u AS (
			UPDATE job_settings SET enabled = false, version = version + 1, updated_at = now(), updated_by = 'bench'
			WHERE name = ANY($1) RETURNING 1
		) SELECT now() FROM (SELECT count(*), pg_notify($2, 'storm over') FROM u) x`, names, postgres.ScheduleChannel).Scan(&ended)
	if err != nil {
		c.tb.Fatal(err)
	}
	// A start that claimed its fire just before may still be on its way to inserting the run:
	// wait for two quiet seconds with no active run.
	testenv.Eventually(c.tb, time.Minute, "the storm's runs to end", func() bool {
		var quiet bool
		_ = c.admin.QueryRow(ctx, `SELECT now() > $2::timestamptz + interval '2 seconds'
			AND NOT EXISTS (SELECT 1 FROM job_runs WHERE job_name = ANY($1)
				AND (status IN ('STARTING', 'RUNNING') OR started_at > now() - interval '2 seconds'))`, names, ended).Scan(&quiet)
		return quiet
	})
}

// stormResult is what the storm left in the database.
type stormResult struct {
	runs        int            // scheduled runs: fires that ran
	perJob      map[string]int // scheduled runs per job
	skipped     int            // fires recorded as skipped because the job was still running, or the like
	missed      int            // fires recorded as missed (no scheduler claimed them in time; a later one ran)
	unaccounted int            // seconds between a job's first and last fire with neither a run nor a record
	duplicates  int            // (job, scheduled_for) pairs with more than one run or record
	p50ms       float64        // lateness (started_at - scheduled_for) of the scheduled runs
	p99ms       float64
	maxms       float64
}

// stormResult reads the storm jobs' scheduled runs and skip records. Unaccounted fires are
// counted between each job's first and last fire, so that the edges of the storm window do not
// count.
func (c *scaleCluster) stormResult(names []string) stormResult {
	c.tb.Helper()
	ctx := context.Background()
	res := stormResult{perJob: map[string]int{}}
	rows, err := c.admin.Query(ctx, `
		WITH f AS (
			SELECT job_name, scheduled_for, 'run' AS kind FROM job_runs WHERE trigger = 'SCHEDULED' AND job_name = ANY($1)
			UNION ALL
			SELECT job_name, scheduled_for, CASE WHEN outcome = 'SKIPPED_MISSED' THEN 'missed' ELSE 'skip' END
			FROM job_schedule_events WHERE job_name = ANY($1)
		), per AS (
			SELECT job_name, scheduled_for, count(*) AS n, count(*) FILTER (WHERE kind = 'run') AS runs,
				count(*) FILTER (WHERE kind = 'skip') AS skips, count(*) FILTER (WHERE kind = 'missed') AS missed
			FROM f GROUP BY 1, 2
		)
		SELECT job_name, sum(runs), sum(skips), sum(missed), count(*) FILTER (WHERE n > 1),
			EXTRACT(EPOCH FROM max(scheduled_for) - min(scheduled_for))::bigint + 1 - count(*)
		FROM per GROUP BY job_name`, names)
	if err != nil {
		c.tb.Fatal(err)
	}
	for rows.Next() {
		var job string
		var runs, skipped, missed, dup, gaps int
		if err := rows.Scan(&job, &runs, &skipped, &missed, &dup, &gaps); err != nil {
			c.tb.Fatal(err)
		}
		res.perJob[job] = runs
		res.runs += runs
		res.skipped += skipped
		res.missed += missed
		res.duplicates += dup
		res.unaccounted += max(gaps, 0)
	}
	if err := rows.Err(); err != nil {
		c.tb.Fatal(err)
	}
	err = c.admin.QueryRow(ctx, `
		SELECT COALESCE(percentile_disc(0.5) WITHIN GROUP (ORDER BY l), 0), COALESCE(percentile_disc(0.99) WITHIN GROUP (ORDER BY l), 0), COALESCE(max(l), 0)
		FROM (SELECT EXTRACT(EPOCH FROM started_at - scheduled_for)::float8 * 1000 AS l FROM job_runs
		      WHERE trigger = 'SCHEDULED' AND job_name = ANY($1)) x`, names).Scan(&res.p50ms, &res.p99ms, &res.maxms)
	if err != nil {
		c.tb.Fatal(err)
	}
	return res
}

// duplicateFires describes every run and skip record of the fires that have more than one.
func (c *scaleCluster) duplicateFires(names []string) []string {
	c.tb.Helper()
	rows, err := c.admin.Query(context.Background(), `
		WITH f AS (
			SELECT job_name, scheduled_for, 'run ' || id || ' ' || status AS what, instance, started_at AS at FROM job_runs
			WHERE trigger = 'SCHEDULED' AND job_name = ANY($1)
			UNION ALL
			SELECT job_name, scheduled_for, 'skip ' || outcome || ' (' || detail || ')', instance, created_at FROM job_schedule_events
			WHERE job_name = ANY($1)
		)
		SELECT job_name, scheduled_for, what, instance, at FROM f
		WHERE (job_name, scheduled_for) IN (SELECT job_name, scheduled_for FROM f GROUP BY 1, 2 HAVING count(*) > 1)
		ORDER BY 1, 2, 5`, names)
	if err != nil {
		c.tb.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var job, what, instance string
		var due, at time.Time
		if err := rows.Scan(&job, &due, &what, &instance, &at); err != nil {
			c.tb.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s fire %s: %s on %s at %s", job, due.UTC().Format("15:04:05.000"), what, instance, at.UTC().Format("15:04:05.000")))
	}
	return out
}

// queryCounter counts the statements a pool sends (BEGIN and COMMIT included).
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
