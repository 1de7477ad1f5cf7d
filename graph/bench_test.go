package graph_test

// Benchmarks of the GraphQL API (issue 4), each on a schema of its own:
//
//	benchmark              default                              BATON_BENCH_SCALE=full
//	GraphStartJob          startJob over HTTP and Runner.Start, 100k past runs for the second
//	                       on a job without past runs and with  pair: 1M
//	                       100k
//	GraphRuns              runs(first: 50), 100k runs loaded    1M runs
//	GraphLedger            ledger(first: 50), 1M rows loaded    10M rows
//	GraphSubscribers       1,000 subscribers, 6 s busy run      1,000 and 10,000, 30 s
//
// Sizes are in the benchmarks' names (runs=100k, n=1000), so figures of different sizes never
// mix in BENCHMARKS.md. Latencies are per request, end to end over loopback HTTP, p50/p99.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/pubsub/pubsubtest"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/server/httpapi"
)

// benchInstance is one Baton instance for a benchmark — a runner with 4 workers, a pubsub Hub
// and the GraphQL endpoint on an httptest server — on a fresh schema, with an ADMIN token.
type benchInstance struct {
	b      *testing.B
	pool   *pgxpool.Pool
	r      *runner.Runner
	sink   *benchSink
	url    string // http://127.0.0.1:port/graphql
	token  string
	client *http.Client
}

func newBenchInstance(b *testing.B, jobs ...runner.Job) *benchInstance {
	b.Helper()
	tb := testbundle.New(b, testenv.Schema)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	pub := pubsubtest.Publisher(b, tb.Redis, tb.Env, pubsub.PublisherOptions{Logger: log})
	sink := &benchSink{Finals: &testbundle.Finals{Next: live.NewEventPublisher(pub)}}
	cfg := tb.BenchConfig()
	cfg.DB, cfg.PoolSize, cfg.DefaultLease, cfg.Events, cfg.Logger = tb.Pool, 4, 30*time.Second, sink, log
	r := tb.Runner(cfg, jobs...)
	hub := pubsubtest.Hub(b, tb.Redis, tb.Env, pubsub.HubOptions{Logger: log})
	mux := http.NewServeMux()
	mux.Handle("/graphql", httpapi.NewHandler(httpapi.Config{
		Tokens:                httpapi.NewTokenStore(tb.Pool),
		GraphQL:               graph.Config{Runner: r, Hub: hub, Logger: log, MutationRatePerMinute: -1},
		MaxWebSocketsPerToken: -1,
	}))
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	tok, _, err := httpapi.CreateToken(context.Background(), httpapi.NewTokenStore(tb.Pool), "bench", model.RoleAdmin)
	if err != nil {
		b.Fatal(err)
	}
	return &benchInstance{b: b, pool: tb.Pool, r: r, sink: sink, url: srv.URL + "/graphql", token: tok,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

// post sends one GraphQL request and decodes its data into out, failing on any error.
func (in *benchInstance) post(b *testing.B, query string, vars map[string]any, out any) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest(http.MethodPost, in.url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+in.token)
	resp, err := in.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []any           `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Errors) > 0 {
		b.Fatalf("HTTP %d: %s", resp.StatusCode, raw)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		b.Fatal(err)
	}
}

// waitFinished waits for run id's final event and for its worker to let go of its slot.
func (in *benchInstance) waitFinished(b *testing.B, id int64) bt.RunRecord {
	b.Helper()
	run := in.sink.Wait(b, id)
	for in.r.Active(id) {
		runtime.Gosched()
	}
	return run
}

// benchSink passes run events on to the publisher and signals each run's final event (its
// Finals), and stamps the moment each item of one tracked run committed: the runner sends an
// event right after every fenced write commits, with the run's new processed count.
type benchSink struct {
	*testbundle.Finals

	mu      sync.Mutex
	tracked int64
	commits map[int64]int64 // processed count → Unix nanoseconds of its commit
}

func (s *benchSink) track(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tracked, s.commits = id, map[int64]int64{}
}

func (s *benchSink) RunChanged(ev runner.RunEvent) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	if ev.Run.ID == s.tracked && ev.Run.Processed > 0 {
		if _, ok := s.commits[ev.Run.Processed]; !ok {
			s.commits[ev.Run.Processed] = now
		}
	}
	s.mu.Unlock()
	s.Finals.RunChanged(ev)
}

func (s *benchSink) commitTimes() map[int64]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits
}

// ---------------------------------------------------------------------------------------------
// startJob over HTTP, next to Runner.Start

// BenchmarkGraphStartJob measures starting a no-op job: runner — Runner.Start called in process
// (lock, insert, hand-off, audit row); http — the startJob mutation over HTTP on the same
// instance (authentication, parsing, the same Start, the run read back). Both report p50/p99
// ms; the difference is the API's cost. Each runs twice: on a job with no past runs
// (history=0), and on one with 100k past runs (1M with BATON_BENCH_SCALE=full, one generation
// each, as a job scheduled every minute leaves in two to three months), loaded with SQL.
func BenchmarkGraphStartJob(b *testing.B) {
	ctx := context.Background()
	in := newBenchInstance(b, runner.NewJob(runner.JobInfo{Name: "noop"}, func(context.Context, *runner.Run) error { return nil }))
	starts := []struct {
		name  string
		start func(b *testing.B) int64
	}{
		{"runner", func(b *testing.B) int64 {
			started, err := in.r.Start(ctx, runner.StartParams{Job: "noop", Actor: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			id := started.ID
			return id
		}},
		{"http", func(b *testing.B) int64 {
			var data struct {
				StartJob struct {
					Run        *struct{ ID string }
					UserErrors []struct{ Code, Message string }
				}
			}
			in.post(b, `mutation { startJob(input: {name: "noop"}) { run { id status } userErrors { code message } } }`, nil, &data)
			if data.StartJob.Run == nil {
				b.Fatalf("startJob: %+v", data.StartJob.UserErrors)
			}
			id, ok := graph.RunNumber(data.StartJob.Run.ID)
			if !ok {
				b.Fatalf("startJob returned run id %q", data.StartJob.Run.ID)
			}
			return id
		}},
	}
	for _, history := range []int{0, testenv.Scaled(100_000, 1_000_000)} {
		if history > 0 {
			_, err := in.pool.Exec(ctx, `
				WITH runs AS (
					INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds,
						lease_until, generation, scheduled_for, started_at, activated_at, finished_at, generation_started_at)
					SELECT 'noop', 'SUCCEEDED', 'SCHEDULED', 'RESTART', 'scheduler', 'bench', md5(g::text), 30,
						now() - ($1 - g) * interval '1 minute', g, now() - ($1 - g) * interval '1 minute',
						now() - ($1 - g) * interval '1 minute', now() - ($1 - g) * interval '1 minute',
						now() - ($1 - g) * interval '1 minute' + interval '1 second', now() - ($1 - g) * interval '1 minute'
					FROM generate_series(1, $1) g
					RETURNING 1
				) UPDATE job_settings SET current_generation = $1 + 1 WHERE name = 'noop' AND EXISTS (SELECT FROM runs)`, history)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := in.pool.Exec(ctx, `ANALYZE job_runs`); err != nil { // as autovacuum would soon
				b.Fatal(err)
			}
		}
		for _, s := range starts {
			b.Run(fmt.Sprintf("%s/history=%s", s.name, testenv.CountLabel(history)), func(b *testing.B) {
				var lat []time.Duration
				for b.Loop() {
					t0 := time.Now()
					id := s.start(b)
					lat = append(lat, time.Since(t0))
					b.StopTimer()
					in.waitFinished(b, id)
					b.StartTimer()
				}
				b.ReportMetric(testenv.Millis(testenv.Quantile(lat, 0.5)), "p50-ms")
				b.ReportMetric(testenv.Millis(testenv.Quantile(lat, 0.99)), "p99-ms")
			})
		}
	}
}

// ---------------------------------------------------------------------------------------------
// runs(first: 50) and ledger(first: 50) on large tables

// listCase is one query of a list benchmark.
type listCase struct {
	name string
	vars map[string]any
}

// benchList runs each case as a sub-benchmark: the query, p50/p99 ms, checking that a full page
// of 50 comes back.
func benchList(b *testing.B, in *benchInstance, prefix, field, query string, cases []listCase) {
	for _, c := range cases {
		b.Run(prefix+"/"+c.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				var data map[string]struct {
					Edges    []json.RawMessage
					PageInfo struct{ HasNextPage bool }
				}
				t0 := time.Now()
				in.post(b, query, c.vars, &data)
				lat = append(lat, time.Since(t0))
				if got := len(data[field].Edges); got != 50 || !data[field].PageInfo.HasNextPage {
					b.Fatalf("%s %v: %d edges, hasNextPage %v; want a full page and more", field, c.vars, got, data[field].PageInfo.HasNextPage)
				}
			}
			b.ReportMetric(testenv.Millis(testenv.Quantile(lat, 0.5)), "p50-ms")
			b.ReportMetric(testenv.Millis(testenv.Quantile(lat, 0.99)), "p99-ms")
		})
	}
}

// cursor makes the opaque cursor of a list position, as graph/pagination.go encodes it, to
// start a page in the middle of a large table.
func cursor(kind string, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("c1:" + kind + ":" + strconv.FormatInt(id, 10)))
}

// BenchmarkGraphRuns times runs(first: 50) — the console's run list — over HTTP with 100k runs
// loaded (1M with BATON_BENCH_SCALE=full; INSERT ... SELECT generate_series), spread over 10 jobs,
// 2 % FAILED and 0.5 % CANCELLED: newest first (all), one job's failures, all cancelled runs,
// and a page from the middle (after a cursor).
func BenchmarkGraphRuns(b *testing.B) {
	n := testenv.Scaled(100_000, 1_000_000)
	noop := func(context.Context, *runner.Run) error { return nil }
	var jobs []runner.Job
	for i := range 10 {
		jobs = append(jobs, runner.NewJob(runner.JobInfo{Name: fmt.Sprintf("job-%d", i)}, noop))
	}
	in := newBenchInstance(b, jobs...)
	ctx := context.Background()
	_, err := in.pool.Exec(ctx, `
		INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until,
			generation, scheduled_for, checkpoint, total, processed, succeeded, failed, started_at, activated_at, finished_at,
			stop_reason, message)
		SELECT 'job-' || (g % 10), s.status, CASE WHEN g % 3 = 0 THEN 'MANUAL' ELSE 'SCHEDULED' END, 'RESTART',
			CASE WHEN g % 3 = 0 THEN 'ops-token' ELSE 'scheduler' END, 'baton-' || (g % 3), md5(g::text), 30,
			now() - (($1 - g) * interval '1 minute') + interval '20 seconds', g / 10 + 1,
			CASE WHEN g % 3 <> 0 THEN date_trunc('minute', now() - ($1 - g) * interval '1 minute') END,
			'page:' || (g % 500), 500, 500, CASE WHEN s.status = 'FAILED' THEN 480 ELSE 500 END,
			CASE WHEN s.status = 'FAILED' THEN 20 ELSE 0 END,
			now() - ($1 - g) * interval '1 minute', now() - ($1 - g) * interval '1 minute',
			now() - ($1 - g) * interval '1 minute' + interval '20 seconds',
			CASE s.status WHEN 'FAILED' THEN 'ERROR' WHEN 'CANCELLED' THEN 'CANCELLED' END,
			CASE WHEN s.status = 'FAILED' THEN 'downstream answered 503 twenty times' ELSE '' END
		FROM generate_series(1, $1) g
		CROSS JOIN LATERAL (SELECT CASE WHEN g % 50 = 7 THEN 'FAILED' WHEN g % 200 = 11 THEN 'CANCELLED' ELSE 'SUCCEEDED' END AS status) s`, n)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := in.pool.Exec(ctx, `ANALYZE job_runs`); err != nil { // as autovacuum would soon
		b.Fatal(err)
	}
	var mid int64
	if err := in.pool.QueryRow(ctx, `SELECT id FROM job_runs ORDER BY id OFFSET $1 LIMIT 1`, n/2).Scan(&mid); err != nil {
		b.Fatal(err)
	}
	const query = `query($job: String, $status: [RunStatus!], $after: String) {
		runs(jobName: $job, status: $status, first: 50, after: $after) {
			edges { cursor node { id jobName status trigger mode requestedBy instance startedAt finishedAt message
				progress { total processed succeeded failed percent } } }
			pageInfo { hasNextPage endCursor }
		}
	}`
	benchList(b, in, "runs="+testenv.CountLabel(n), "runs", query, []listCase{
		{"all", nil},
		{"job+failed", map[string]any{"job": "job-7", "status": []string{"FAILED"}}},
		{"cancelled", map[string]any{"status": []string{"CANCELLED"}}},
		{"after", map[string]any{"after": cursor("runs", mid)}},
	})
}

// BenchmarkGraphLedger times ledger(first: 50) over HTTP with 1M ledger rows loaded (10M with
// BATON_BENCH_SCALE=full): one large job written by 10 runs (a generation each; ~98 %
// CONFIRMED, the rest failed in each class or ambiguous) and a job that started running only
// recently, whose rows (0.3 % of the table) all come last. Queries: the large job's entries,
// its AMBIGUOUS_EFFECT entries (the quarantine), one run's entries, and the recent job's
// entries. (A page from the middle of a list is in BenchmarkGraphRuns.)
func BenchmarkGraphLedger(b *testing.B) {
	n := testenv.Scaled(1_000_000, 10_000_000)
	noop := func(context.Context, *runner.Run) error { return nil }
	in := newBenchInstance(b, runner.NewJob(runner.JobInfo{Name: "payouts"}, noop), runner.NewJob(runner.JobInfo{Name: "reports"}, noop))
	ctx := context.Background()
	var runs []int64
	rows, err := in.pool.Query(ctx, `
		INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until,
			generation, finished_at)
		SELECT CASE WHEN g <= 10 THEN 'payouts' ELSE 'reports' END, 'SUCCEEDED', 'SCHEDULED', 'RESTART', 'scheduler', 'bench',
			md5(g::text), 30, now(), g, now()
		FROM generate_series(1, 11) g RETURNING id`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		runs = append(runs, id)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	small := n * 3 / 1000
	big := n - small
	// Writing the table's WAL is not what this benchmark measures: unlogged, it loads in about
	// two thirds of the time, and reads the same.
	if _, err := in.pool.Exec(ctx, `ALTER TABLE job_ledger SET UNLOGGED`); err != nil {
		b.Fatal(err)
	}
	_, err = in.pool.Exec(ctx, `
		INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, input_hash,
			external, effect_ref, last_error, last_error_sig, same_error_count, run_id)
		SELECT j.name, j.gen, 'customer-' || lpad(g::text, 9, '0'), '', s.state, CASE WHEN s.state = 'SKIPPED' THEN 0 ELSE 1 END,
			'bt_' || md5(j.name || ':' || g), md5(g::text) || md5(g::text || 'x'), true,
			CASE WHEN s.state = 'CONFIRMED' THEN 'pay_' || lpad(g::text, 12, '0') END,
			CASE WHEN s.state NOT IN ('CONFIRMED', 'SKIPPED') THEN 'provider answered 422: amount exceeds the daily limit' END,
			CASE WHEN s.state NOT IN ('CONFIRMED', 'SKIPPED') THEN s.state || ':' || md5(s.state) END,
			CASE WHEN s.state NOT IN ('CONFIRMED', 'SKIPPED') THEN 1 ELSE 0 END, j.run
		FROM generate_series(1, $1::int + $2::int) g
		CROSS JOIN LATERAL (SELECT
			CASE WHEN g <= $1 THEN 'payouts' ELSE 'reports' END AS name,
			CASE WHEN g <= $1 THEN (g - 1) * 10 / $1 + 1 ELSE 11 END AS gen,
			($3::bigint[])[CASE WHEN g <= $1 THEN (g - 1) * 10 / $1 + 1 ELSE 11 END] AS run) j
		CROSS JOIN LATERAL (SELECT CASE
			WHEN g % 1000 < 2 THEN 'AMBIGUOUS_EFFECT' WHEN g % 1000 < 10 THEN 'TRANSIENT'
			WHEN g % 1000 < 15 THEN 'VALIDATION_REJECTED' WHEN g % 1000 < 18 THEN 'BUG_SUSPECTED'
			WHEN g % 1000 < 20 THEN 'SKIPPED' ELSE 'CONFIRMED' END AS state) s`, big, small, runs)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := in.pool.Exec(ctx, `ANALYZE job_ledger`); err != nil { // as autovacuum would soon
		b.Fatal(err)
	}
	const query = `query($job: String!, $state: [LedgerState!], $run: ID) {
		ledger(jobName: $job, state: $state, runId: $run, first: 50) {
			edges { cursor node { id targetKey step state attempt idempotencyKey effectRef lastError updatedAt run { id status } } }
			pageInfo { hasNextPage endCursor }
		}
	}`
	benchList(b, in, "rows="+testenv.CountLabel(n), "ledger", query, []listCase{
		{"job", map[string]any{"job": "payouts"}},
		{"job+ambiguous", map[string]any{"job": "payouts", "state": []string{"AMBIGUOUS_EFFECT"}}},
		{"job+run", map[string]any{"job": "payouts", "run": graph.RunID(runs[6])}},
		{"recent-job", map[string]any{"job": "reports"}},
	})
}

// ---------------------------------------------------------------------------------------------
// 1,000 WebSocket subscribers to one busy run

const subscriberQuery = `subscription($id: ID!) { runProgress(runId: $id) { id status progress { processed total } } }`

// BenchmarkGraphSubscribers connects n graphql-transport-ws clients (gorilla) to one instance,
// all subscribed to runProgress of one run, then lets the run commit items as fast as it can
// (strict path, one commit per item) for 6 s (30 s with BATON_BENCH_SCALE=full, which also
// runs n=10000). The clients live in a child process (this test binary again, running
// TestSubscriberClientProcess), so that the server's CPU and memory are measured alone.
//
// Latency is item-commit-to-client, from the runner's event right after an item's commit to
// the client's receipt (both processes stamp the same wall clock):
//   - p50-ms / p99-ms: each update a client receives, against the commit of the newest item it
//     carries — how stale what a client sees is when it sees it;
//   - item-p50-ms / item-p99-ms: every committed item, against the first update a client
//     receives that includes it. Progress is coalesced per run (at most ~10 updates a second,
//     latest wins), so this adds the wait for the next update: up to ~100 ms by design.
//
// Also: updates/s per client, the run's items/s meanwhile, subscribers that missed the final
// state (lost-finals, must be 0), the server process's CPU (cores busy over the busy window,
// from getrusage; and per update delivered in that window, server-cpu-us/update, the figure
// least disturbed by a noisy machine) and resident memory at its end, with the growth per
// subscriber. The server's CPU includes the run's own commits: before any client connects, a
// run of the same job is measured alone (run-cpu-us/item), and server-cpu-us/update-net is the
// busy window's CPU less that much per item the run committed in it, per update delivered.
// BenchmarkWebSocketFloor is the floor under it.
func BenchmarkGraphSubscribers(b *testing.B) {
	for _, n := range subscriberSizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { subscribersBench(b, n, testenv.Scaled(6*time.Second, 30*time.Second)) })
	}
}

// subscriberSizes are the subscriber counts the subscriber benchmarks run: 1,000 and 5,000
// (the 10,000 of the goal saturates this 2-core machine, clients included: the report
// extrapolates from 5,000); 1,000, 5,000 and 10,000 with BATON_BENCH_SCALE=full; or
// BATON_BENCH_SUBSCRIBERS, e.g. "10,1000".
func subscriberSizes(b *testing.B) []int {
	v := os.Getenv("BATON_BENCH_SUBSCRIBERS")
	if v == "" {
		return testenv.Scaled([]int{1000, 5000}, []int{1000, 5000, 10000})
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("BATON_BENCH_SUBSCRIBERS=%q: want a comma-separated list of positive counts", v)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// busyJob is a job whose run commits no-op items, one commit each, once gate is closed and
// until stop is set, adding each committed item to items.
func busyJob(name string, gate chan struct{}, stop *atomic.Bool, items *atomic.Int64) runner.Job {
	return runner.NewJob(runner.JobInfo{Name: name, Lease: time.Minute}, func(ctx context.Context, run *runner.Run) error {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		noop := func(context.Context, *runner.Attempt) error { return nil }
		for i := 1; !stop.Load(); i++ {
			if err := run.Process(ctx, runner.Item{Target: "t" + strconv.Itoa(i), Checkpoint: strconv.Itoa(i)}, noop); err != nil {
				return err
			}
			items.Add(1)
		}
		return nil
	})
}

// aloneWindow is how long the run alone is measured, before any subscriber connects.
const aloneWindow = 3 * time.Second

func subscribersBench(b *testing.B, n int, busy time.Duration) {
	ctx := context.Background()
	gate := make(chan struct{})
	var stop, aloneStop atomic.Bool
	var items, aloneItems atomic.Int64
	open := make(chan struct{})
	close(open)
	in := newBenchInstance(b, busyJob("busy", gate, &stop, &items), busyJob("alone", open, &aloneStop, &aloneItems))

	// The run alone: the server's CPU per committed item with no subscriber, which the
	// figure net of the run's own work subtracts (server-cpu-us/update-net).
	alone, err := in.r.Start(ctx, runner.StartParams{Job: "alone", Mode: bt.ModeRestart})
	if err != nil {
		b.Fatal(err)
	}
	testenv.Eventually(b, time.Minute, "the run alone to commit items", func() bool { return aloneItems.Load() > 0 })
	aloneCPU0, aloneItems0 := cpuTime(b), aloneItems.Load()
	time.Sleep(aloneWindow) // a measurement window: the run commits items meanwhile
	aloneCPU, aloneN := cpuTime(b)-aloneCPU0, aloneItems.Load()-aloneItems0
	aloneStop.Store(true)
	in.waitFinished(b, alone.ID)
	if aloneN == 0 {
		b.Fatal("the run alone committed no item in its window")
	}
	cpuPerItem := aloneCPU / time.Duration(aloneN)

	started, err := in.r.Start(ctx, runner.StartParams{Job: "busy", Mode: bt.ModeRestart})
	if err != nil {
		b.Fatal(err)
	}
	id := started.ID
	in.sink.track(id)
	b.Cleanup(func() { stop.Store(true); closeOnce(gate) })
	rssBefore, _ := testbundle.ProcMemory(b, os.Getpid())

	clients := startClients(b, in.url, in.token, graph.RunID(id), n)
	rssConnected, _ := testbundle.ProcMemory(b, os.Getpid())

	var busyRSS, busyHWM, cores float64
	var heap uint64
	var busyCPU time.Duration
	var busyFrom, busyTo int64 // Unix nanoseconds
	var busyItems int64
	for b.Loop() {
		cpu0, t0, items0 := cpuTime(b), time.Now(), items.Load()
		closeOnce(gate)
		time.Sleep(busy) // the run commits items meanwhile; the clients record what they receive
		busyCPU = cpuTime(b) - cpu0
		busyItems = items.Load() - items0
		t1 := time.Now()
		cores = busyCPU.Seconds() / t1.Sub(t0).Seconds()
		busyFrom, busyTo = t0.UnixNano(), t1.UnixNano()
		busyRSS, busyHWM = testbundle.ProcMemory(b, os.Getpid())
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapInuse
	}
	stop.Store(true)
	final := in.waitFinished(b, id)
	rec := clients.wait(b)
	if err != nil {
		b.Fatal(err)
	}
	commits := in.sink.commitTimes()
	lat := newHistogram()
	itemLat := newHistogram()
	finals, updates, busyMsgs := 0, 0, 0
	for _, msgs := range rec {
		seen := int64(0)
		if slices.ContainsFunc(msgs, func(m received) bool { return m.final }) {
			finals++ // clients that had the final state, however often
		}
		for _, m := range msgs {
			if m.at >= busyFrom && m.at <= busyTo {
				busyMsgs++
			}
			if m.processed <= seen {
				continue // the snapshot, or a state already delivered (the final one repeats the count)
			}
			if at, ok := commits[m.processed]; ok {
				lat.add(time.Duration(m.at - at))
				updates++
			}
			for k := seen + 1; k <= m.processed; k++ {
				if at, ok := commits[k]; ok {
					itemLat.add(time.Duration(m.at - at))
				}
			}
			seen = m.processed
		}
	}
	if finals < n {
		b.Logf("%d clients had no final state; the client process said:\n%s", n-finals, clients.stderr.String())
	}
	if len(rec) != n || lat.n == 0 {
		b.Fatalf("%d clients reported, %d updates timed", len(rec), lat.n)
	}
	b.ReportMetric(lat.quantile(0.5), "p50-ms")
	b.ReportMetric(lat.quantile(0.99), "p99-ms")
	b.ReportMetric(itemLat.quantile(0.5), "item-p50-ms")
	b.ReportMetric(itemLat.quantile(0.99), "item-p99-ms")
	b.ReportMetric(float64(updates)/float64(n)/busy.Seconds(), "updates/s/client")
	b.ReportMetric(float64(final.Processed)/busy.Seconds(), "run-items/s")
	b.ReportMetric(float64(n-finals), "lost-finals")
	b.ReportMetric(cores, "server-cpu-cores")
	if busyMsgs > 0 {
		b.ReportMetric(float64(busyCPU.Microseconds())/float64(busyMsgs), "server-cpu-us/update")
		net := busyCPU - cpuPerItem*time.Duration(busyItems)
		b.ReportMetric(float64(net.Microseconds())/float64(busyMsgs), "server-cpu-us/update-net")
	}
	b.ReportMetric(float64(cpuPerItem.Nanoseconds())/1e3, "run-cpu-us/item")
	b.ReportMetric(busyRSS, "server-rss-MB")
	b.ReportMetric(busyHWM, "server-peak-rss-MB")
	b.ReportMetric(float64(heap)/1e6, "server-heap-MB")
	b.ReportMetric((rssConnected-rssBefore)*1e3/float64(n), "rss-kB/subscriber")
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// cpuTime returns the CPU time this process has used (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// histogram keeps latencies in 0.1 ms buckets up to a minute (millions of samples at no cost).
type histogram struct {
	counts []int64
	n      int64
}

const histogramBucket = 100 * time.Microsecond

func newHistogram() *histogram {
	return &histogram{counts: make([]int64, int(time.Minute/histogramBucket)+1)}
}

func (h *histogram) add(d time.Duration) {
	i := min(max(int(d/histogramBucket), 0), len(h.counts)-1)
	h.counts[i]++
	h.n++
}

// quantile returns the q-quantile in milliseconds (the upper edge of its bucket).
func (h *histogram) quantile(q float64) float64 {
	rank := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank && c > 0 {
			return testenv.Millis(time.Duration(i+1) * histogramBucket)
		}
	}
	return math.NaN()
}

// received is one message a client received: the run's processed count, whether it was the
// final state, and when it arrived (Unix nanoseconds).
type received struct {
	processed int64
	final     bool
	at        int64
}

// readReceived reads the client process's record: one line per message, "client processed
// final at".
func readReceived(path string) (map[int][]received, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int][]received{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c int
		var r received
		if _, err := fmt.Sscanf(sc.Text(), "%d %d %t %d", &c, &r.processed, &r.final, &r.at); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		out[c] = append(out[c], r)
	}
	return out, sc.Err()
}

// BenchmarkWebSocketFloor is the floor under BenchmarkGraphSubscribers' server CPU per update:
// a bare gorilla/websocket server, no GraphQL, no runner, no database, speaking just enough
// graphql-transport-ws to the same client process (TestSubscriberClientProcess), sends the
// same messages at the same rate — a runProgress update ten times a second to each of n
// subscribers, one goroutine writing each connection, as gqlgen's transport does — for the
// same window. Every subscriber gets the same bytes, framed once (websocket.PreparedMessage):
// the least any server can do per update is the write itself. It reports the server's CPU
// per update delivered (server-cpu-us/update), the figure the subscriber goal is read against.
func BenchmarkWebSocketFloor(b *testing.B) {
	for _, n := range subscriberSizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			websocketFloor(b, n, testenv.Scaled(6*time.Second, 30*time.Second), false)
		})
	}
}

// BenchmarkWebSocketOneWriterFloor is BenchmarkWebSocketFloor with no goroutine per
// connection: the goroutine that has the update writes the prepared frame to every connection
// in turn, as a transport that fanned shared frames out itself could. What is left is the
// write system call per subscriber (on loopback it also carries the receiving client's TCP
// work). It is the lower floor under the 10,000-subscriber, one-core goal.
func BenchmarkWebSocketOneWriterFloor(b *testing.B) {
	for _, n := range subscriberSizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			websocketFloor(b, n, testenv.Scaled(6*time.Second, 30*time.Second), true)
		})
	}
}

// floorSubscriber is one connection of the floor's server: its updates (nil ends them) and,
// for one writer, the connection that writer writes to, one write at a time.
type floorSubscriber struct {
	updates chan *websocket.PreparedMessage
	mu      sync.Mutex
	c       *websocket.Conn
	err     error
}

// floorUpdate is the message of update k of the floor's one run: the bytes gqlgen sends for
// subscriberQuery, with the subscription id the client process uses.
func floorUpdate(k int64, status string) []byte {
	return fmt.Appendf(nil, `{"payload":{"data":{"runProgress":{"id":"UnVuOjE","status":%q,"progress":{"processed":%d,"total":null}}}},"id":"1","type":"next"}`, status, k)
}

func websocketFloor(b *testing.B, n int, busy time.Duration, oneWriter bool) {
	var mu sync.Mutex
	subscribers := map[*floorSubscriber]struct{}{}
	var handlers sync.WaitGroup
	upgrader := websocket.Upgrader{Subprotocols: []string{"graphql-transport-ws"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		handlers.Add(1)
		defer handlers.Done()
		defer c.Close()
		sub := &floorSubscriber{updates: make(chan *websocket.PreparedMessage, 1), c: c}
		for i, reply := range []string{`{"type":"connection_ack"}`, string(floorUpdate(0, "RUNNING"))} {
			if _, _, err := c.ReadMessage(); err != nil { // connection_init, then subscribe
				return
			}
			if i == 1 { // subscribed before its snapshot goes: the client counts as ready on it
				mu.Lock()
				subscribers[sub] = struct{}{}
				mu.Unlock()
			}
			sub.mu.Lock()
			err := c.WriteMessage(websocket.TextMessage, []byte(reply))
			sub.mu.Unlock()
			if err != nil {
				return
			}
		}
		go func() { // the client sends nothing more but a close
			for {
				if _, _, err := c.NextReader(); err != nil {
					return
				}
			}
		}()
		for m := range sub.updates { // one writer: only the end comes this way
			if m == nil {
				break
			}
			if err := c.WritePreparedMessage(m); err != nil {
				return
			}
		}
		sub.mu.Lock()
		defer sub.mu.Unlock()
		final := floorUpdate(-1, "SUCCEEDED")
		if sub.err == nil && c.WriteMessage(websocket.TextMessage, final) == nil {
			_ = c.WriteMessage(websocket.TextMessage, []byte(`{"id":"1","type":"complete"}`))
		}
	}))
	b.Cleanup(srv.Close)

	clients := startClients(b, srv.URL, "floor", "UnVuOjE", n)
	mu.Lock()
	if len(subscribers) != n {
		mu.Unlock()
		b.Fatalf("%d subscribers after the client process was ready, want %d", len(subscribers), n)
	}
	mu.Unlock()

	broadcast := func(m *websocket.PreparedMessage) {
		mu.Lock()
		defer mu.Unlock()
		for s := range subscribers {
			if oneWriter && m != nil {
				s.mu.Lock()
				if s.err == nil {
					s.err = s.c.WritePreparedMessage(m)
				}
				s.mu.Unlock()
				continue
			}
			select { // latest wins, as the server's coalescing does
			case <-s.updates:
			default:
			}
			s.updates <- m
		}
	}
	var busyCPU time.Duration
	var busyFrom, busyTo int64
	for b.Loop() {
		cpu0, t0 := cpuTime(b), time.Now()
		tick := time.NewTicker(100 * time.Millisecond)
		for k := int64(1); time.Since(t0) < busy; k++ {
			<-tick.C
			m, err := websocket.NewPreparedMessage(websocket.TextMessage, floorUpdate(k, "RUNNING"))
			if err != nil {
				b.Fatal(err)
			}
			broadcast(m)
		}
		tick.Stop()
		busyCPU = cpuTime(b) - cpu0
		busyFrom, busyTo = t0.UnixNano(), time.Now().UnixNano()
	}
	broadcast(nil)
	rec := clients.wait(b)
	handlers.Wait()
	busyMsgs, finals := 0, 0
	for _, msgs := range rec {
		if slices.ContainsFunc(msgs, func(m received) bool { return m.final }) {
			finals++
		}
		for _, m := range msgs {
			if !m.final && m.at >= busyFrom && m.at <= busyTo {
				busyMsgs++
			}
		}
	}
	if len(rec) != n || finals != n || busyMsgs == 0 {
		b.Fatalf("%d clients reported, %d final states, %d updates in the window", len(rec), finals, busyMsgs)
	}
	b.ReportMetric(float64(busyCPU.Microseconds())/float64(busyMsgs), "server-cpu-us/update")
	b.ReportMetric(float64(busyMsgs)/float64(n)/busy.Seconds(), "updates/s/client")
}

// clientProcess is the client side of the subscriber benchmarks: TestSubscriberClientProcess
// in a child process.
type clientProcess struct {
	out    string // where it writes what its clients received
	stderr bytes.Buffer
	exited chan error
}

// startClients starts n clients in a child process, each subscribed to runProgress of run at
// url (http://…/graphql) with token, and returns once every one has its snapshot.
func startClients(b *testing.B, url, token, run string, n int) *clientProcess {
	p := &clientProcess{out: filepath.Join(b.TempDir(), "received.txt"), exited: make(chan error, 1)}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSubscriberClientProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BATON_BENCH_WS_URL=ws"+strings.TrimPrefix(url, "http"), "BATON_BENCH_WS_TOKEN="+token,
		"BATON_BENCH_WS_RUN="+run, "BATON_BENCH_WS_N="+strconv.Itoa(n), "BATON_BENCH_WS_OUT="+p.out)
	cmd.Stderr = &p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		p.exited <- cmd.Wait()
	}()
	b.Cleanup(func() { _ = cmd.Process.Kill() })
	ready := time.After(5 * time.Minute)
	for connected := false; !connected; {
		select {
		case l, ok := <-lines:
			if !ok {
				b.Fatalf("client process ended before its clients were ready: %v\n%s", <-p.exited, p.stderr.String())
			}
			connected = l == "ready"
		case <-ready:
			b.Fatalf("clients not ready after 5 minutes\n%s", p.stderr.String())
		}
	}
	go func() {
		for range lines { // the test binary's own output
		}
	}()
	return p
}

// wait waits for the client process to end, once its clients have had the final state, and
// returns what each received.
func (p *clientProcess) wait(b *testing.B) map[int][]received {
	select {
	case err := <-p.exited:
		if err != nil {
			b.Fatalf("client process: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(5 * time.Minute):
		b.Fatalf("client process did not end after the final state\n%s", p.stderr.String())
	}
	rec, err := readReceived(p.out)
	if err != nil {
		b.Fatal(err)
	}
	return rec
}

// TestSubscriberClientProcess is not a test: it is the client side of BenchmarkGraphSubscribers,
// run in a child process. It connects BATON_BENCH_WS_N graphql-transport-ws clients to
// BATON_BENCH_WS_URL, subscribes each to runProgress of BATON_BENCH_WS_RUN, prints "ready" once
// every client has its snapshot, records every message until the run's final state, and writes
// the record to BATON_BENCH_WS_OUT.
func TestSubscriberClientProcess(t *testing.T) {
	url := os.Getenv("BATON_BENCH_WS_URL")
	if url == "" {
		t.Skip("the client process of BenchmarkGraphSubscribers")
	}
	n, err := strconv.Atoi(os.Getenv("BATON_BENCH_WS_N"))
	if err != nil {
		t.Fatal(err)
	}
	token, run := os.Getenv("BATON_BENCH_WS_TOKEN"), os.Getenv("BATON_BENCH_WS_RUN")
	conns := make([]*websocket.Conn, n)
	dialer := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: time.Minute}
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := subscribeClient(&dialer, url, token, run)
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fmt.Println("ready")

	records := make([][]received, n)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Minute))
			for {
				var m struct {
					Type    string          `json:"type"`
					Payload json.RawMessage `json:"payload"`
				}
				// A client that ends before the final state says why (the benchmark logs it).
				gotFinal := func() bool { rs := records[i]; return len(rs) > 0 && rs[len(rs)-1].final }
				if err := c.ReadJSON(&m); err != nil {
					if !gotFinal() {
						fmt.Fprintf(os.Stderr, "client %d: no final state; the connection ended: %v\n", i, err)
					}
					return
				}
				at := time.Now().UnixNano()
				switch m.Type {
				case "ping":
					_ = c.WriteJSON(map[string]string{"type": "pong"})
				case "next":
					var next struct {
						Data struct {
							RunProgress struct {
								Status   string
								Progress struct{ Processed int64 }
							}
						}
					}
					if err := json.Unmarshal(m.Payload, &next); err != nil {
						fmt.Fprintf(os.Stderr, "client %d: a next message it cannot read: %v: %s\n", i, err, m.Payload)
						return
					}
					p := next.Data.RunProgress
					final := p.Status != "RUNNING" && p.Status != "STARTING"
					records[i] = append(records[i], received{processed: p.Progress.Processed, final: final, at: at})
				case "complete", "error":
					if !gotFinal() {
						fmt.Fprintf(os.Stderr, "client %d: no final state; the server sent %s: %s\n", i, m.Type, m.Payload)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	var buf bytes.Buffer
	for i, rs := range records {
		for _, r := range rs {
			fmt.Fprintf(&buf, "%d %d %t %d\n", i, r.processed, r.final, r.at)
		}
	}
	if err := os.WriteFile(os.Getenv("BATON_BENCH_WS_OUT"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// subscribeClient connects one client, authenticates it in connection_init, subscribes it to
// the run and waits for the snapshot.
func subscribeClient(d *websocket.Dialer, url, token, run string) (*websocket.Conn, error) {
	c, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*websocket.Conn, error) { c.Close(); return nil, err }
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	if err := c.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]string{"authorization": "Bearer " + token}}); err != nil {
		return fail(err)
	}
	sub := map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": subscriberQuery, "variables": map[string]string{"id": run}}}
	for subscribed := false; ; {
		var m struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := c.ReadJSON(&m); err != nil {
			return fail(err)
		}
		switch m.Type {
		case "ping":
			_ = c.WriteJSON(map[string]string{"type": "pong"})
		case "connection_ack":
			if err := c.WriteJSON(sub); err != nil {
				return fail(err)
			}
			subscribed = true
		case "next":
			if !subscribed {
				return fail(fmt.Errorf("next before the subscription"))
			}
			return c, nil // the snapshot
		default:
			return fail(fmt.Errorf("unexpected %s: %s", m.Type, m.Payload))
		}
	}
}
