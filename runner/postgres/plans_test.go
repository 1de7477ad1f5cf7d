package postgres_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
)

// bigTables are the tables a list query must never walk: they grow with every item and run.
var bigTables = map[string]bool{"job_ledger": true, "job_runs": true, "job_run_errors": true, "replay_requests": true, "audit_log": true}

// TestListQueryPlansUseIndexes loads tables of production-like size (200k ledger rows, 100k
// runs across 100 jobs, 100k run errors, 50k replay requests, 100k audit rows), runs every
// filter shape of the list queries more than five times through the store's pgx pool (after
// five executions PostgreSQL may switch a prepared statement to its generic plan), and then,
// on the same connection: checks that no list statement was left prepared there (so none can
// go generic), and explains each statement as the store runs it. No plan may scan a big table
// sequentially, and a shape filtered on an indexed column must reach that table through an
// index condition on it (not by walking the primary key and filtering: with a rare value,
// that is a scan of the table too).
func TestListQueryPlansUseIndexes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	url := testenv.Schema(t)
	admin := testenv.Pool(t, url)
	ids := loadListTables(t, admin)

	rec := &statementRecorder{args: map[string][]any{}}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // every statement prepared and planned on one connection, explained there
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := postgres.New(pool)

	type shape struct {
		name string
		cond string // column an index condition on the big table must use ("" none: a walk in key order is the plan)
		run  func() (int, error)
	}
	n := func(l int, err error) (int, error) { return l, err }
	ledger := func(q store.LedgerQuery) func() (int, error) {
		return func() (int, error) { e, err := s.Ledger(ctx, q); return n(len(e), err) }
	}
	runs := func(f store.RunFilter) func() (int, error) {
		return func() (int, error) { r, err := s.Runs(ctx, f); return n(len(r), err) }
	}
	replays := func(st []bt.ReplayStatus, before int64) func() (int, error) {
		return func() (int, error) { r, err := s.ReplayRequests(ctx, st, before, 20); return n(len(r), err) }
	}
	audit := func(before int64) func() (int, error) {
		return func() (int, error) {
			r, err := s.AuditLog(ctx, bt.AuditFilter{BeforeID: before, Limit: 20})
			return n(len(r), err)
		}
	}
	auditBy := func(f bt.AuditFilter) func() (int, error) {
		f.Limit = 20
		return func() (int, error) { r, err := s.AuditLog(ctx, f); return n(len(r), err) }
	}
	runErrors := func(after int64) func() (int, error) {
		return func() (int, error) { r, err := s.RunErrors(ctx, ids.errRun, after, 20); return n(len(r), err) }
	}
	// An hour of the 100k runs, which started one a second, the newest now.
	rangeFrom, rangeTo := time.Now().Add(-50000*time.Second), time.Now().Add(-46400*time.Second)
	failed := []bt.LedgerState{bt.LedgerTransient, bt.LedgerAmbiguous}
	shapes := []shape{
		{"ledger/job", "job_name", ledger(store.LedgerQuery{JobName: "recent"})},
		{"ledger/job/after", "job_name", ledger(store.LedgerQuery{JobName: "recent", AfterID: ids.recentLedger})},
		{"ledger/job/state", "job_name", ledger(store.LedgerQuery{JobName: "bulk", States: []bt.LedgerState{bt.LedgerAmbiguous}})},
		// The job holds 99.5 % of the rows: walking them in id order is the right plan.
		{"ledger/job/states", "", ledger(store.LedgerQuery{JobName: "bulk", States: failed})},
		{"ledger/job/run", "run_id", ledger(store.LedgerQuery{JobName: "recent", RunID: ids.recentRun})},
		{"ledger/job/generation", "job_name", ledger(store.LedgerQuery{JobName: "recent", Generation: 2})},
		{"ledger/job/prefix", "job_name", ledger(store.LedgerQuery{JobName: "recent", TargetPrefix: "t-0005"})},
		{"ledger/job/states/run/after", "", ledger(store.LedgerQuery{JobName: "bulk", States: failed, RunID: ids.bulkRun, AfterID: 1000})},
		{"ledger/all", "", ledger(store.LedgerQuery{})},
		{"runs/all", "", runs(store.RunFilter{})},
		{"runs/before", "id", runs(store.RunFilter{BeforeID: 5000})},
		{"runs/job", "job_name", runs(store.RunFilter{JobName: "recent"})},
		{"runs/job/before", "job_name", runs(store.RunFilter{JobName: "job-007", BeforeID: 50000})},
		{"runs/status", "status", runs(store.RunFilter{Statuses: []bt.RunStatus{bt.StatusPaused}})},
		// The partial index of active runs: its predicate, not an index condition.
		{"runs/statuses", "", runs(store.RunFilter{Statuses: []bt.RunStatus{bt.StatusStarting, bt.StatusRunning}})},
		{"runs/job/status", "", runs(store.RunFilter{JobName: "job-010", Statuses: []bt.RunStatus{bt.StatusFailed}})},
		{"runs/trigger", "trigger", runs(store.RunFilter{Triggers: []bt.Trigger{bt.TriggerManual}})},
		{"runs/instance", "instance", runs(store.RunFilter{Instance: "rare"})},
		{"runs/started", "started_at", runs(store.RunFilter{StartedFrom: &rangeFrom, StartedBefore: &rangeTo})},
		{"runs/job/started", "started_at", runs(store.RunFilter{JobName: "job-042", StartedFrom: &rangeFrom, StartedBefore: &rangeTo})},
		{"runs/number", "id", runs(store.RunFilter{Number: 4242})},
		{"replays/all", "", replays(nil, 0)},
		{"replays/status", "status", replays([]bt.ReplayStatus{bt.ReplayPendingApproval}, 0)},
		{"replays/statuses/before", "status", replays([]bt.ReplayStatus{bt.ReplayPendingApproval, bt.ReplayApproved}, 40000)},
		{"audit/all", "", audit(0)},
		{"audit/before", "id", audit(500)},
		{"audit/actor", "actor", auditBy(bt.AuditFilter{Actor: "rare"})},
		{"audit/action", "action", auditBy(bt.AuditFilter{Action: "cancelRun"})},
		{"audit/target", "target", auditBy(bt.AuditFilter{Target: "run:9000"})},
		{"audit/outcome/before", "outcome", auditBy(bt.AuditFilter{Outcome: "FORBIDDEN", BeforeID: 90000})},
		{"run-errors", "run_id", runErrors(0)},
		{"run-errors/after", "run_id", runErrors(10)},
		{"last-runs-paused-by", "job_name", func() (int, error) { j, err := s.LastRunsPausedBy(ctx, bt.StopMaintenance); return n(len(j), err) }},
	}
	const executions = 7 // the plan cache considers a generic plan from the sixth
	cond := map[string]string{}
	for _, sh := range shapes {
		rec.begin(sh.name)
		var got int
		for range executions {
			if got, err = sh.run(); err != nil {
				t.Fatalf("%s: %v", sh.name, err)
			}
		}
		if got == 0 && sh.name != "last-runs-paused-by" {
			t.Fatalf("%s found nothing: the data set does not exercise it", sh.name)
		}
		for _, sql := range rec.end() {
			if strings.Contains(sql, "WHERE parent_run_id = ANY") {
				// The shards of the runs a shape reads, looked up first (whereRun): one probe
				// of job_runs_shards, whatever the shape.
				cond[sql] = "parent_run_id"
				continue
			}
			if c, ok := cond[sql]; ok && c != sh.cond {
				t.Fatalf("%s shares its statement with a shape that expects %q", sh.name, c)
			}
			cond[sql] = sh.cond
		}
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// No list statement may be a prepared statement on the connection: one would go generic.
	prepared := map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT statement FROM pg_prepared_statements`)
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range stmts {
		prepared[sql] = true
	}
	explained := 0
	for _, sh := range shapes {
		for _, sql := range rec.statements(sh.name) {
			if prepared[sql] && !strings.Contains(sql, "LATERAL") {
				t.Errorf("%s: a prepared statement on the connection, whose plan may go generic:\n%s", sh.name, sql)
			}
			// Explained as it runs: unprepared, planned with the shape's arguments.
			args := append([]any{pgx.QueryExecModeExec}, rec.args[sql]...)
			var plan []struct{ Plan planNode }
			if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
				t.Fatalf("%s: explain: %v\n%s", sh.name, err, sql)
			}
			checkPlan(t, sh.name, sql, &plan[0].Plan, cond[sql])
			explained++
		}
	}
	if explained < len(shapes) {
		t.Fatalf("explained %d plans for %d shapes", explained, len(shapes))
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Index     string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
}

func (p *planNode) walk(f func(p *planNode)) {
	f(p)
	for i := range p.Plans {
		p.Plans[i].walk(f)
	}
}

// checkPlan fails on a sequential scan of a big table, and, when cond is set, when no index
// condition on the queried big table uses column cond.
func checkPlan(t *testing.T, what, sql string, plan *planNode, cond string) {
	t.Helper()
	dump := func() string { b, _ := json.MarshalIndent(plan, "", " "); return string(b) }
	indexed := false
	plan.walk(func(p *planNode) {
		if p.NodeType == "Seq Scan" && bigTables[p.Relation] {
			t.Errorf("%s: sequential scan of %s\n%s\n%s", what, p.Relation, sql, dump())
		}
		if cond != "" && p.IndexCond != "" && strings.Contains(p.IndexCond, cond) {
			indexed = true
		}
	})
	if cond != "" && !indexed {
		t.Errorf("%s: no index condition on %s\n%s\n%s", what, cond, sql, dump())
	}
}

// statementRecorder records the statements (and their last arguments) each shape ran.
type statementRecorder struct {
	mu     sync.Mutex
	shape  string
	byName map[string][]string
	seen   map[string]bool
	args   map[string][]any
	cur    []string
}

func (r *statementRecorder) begin(shape string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shape, r.cur, r.seen = shape, nil, map[string]bool{}
}

func (r *statementRecorder) end() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = map[string][]string{}
	}
	r.byName[r.shape] = r.cur
	return r.cur
}

func (r *statementRecorder) statements(shape string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byName[shape]
}

func (r *statementRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen[d.SQL] {
		r.seen[d.SQL] = true
		r.cur = append(r.cur, d.SQL)
	}
	args := d.Args
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			args = args[1:]
		}
	}
	r.args[d.SQL] = args
	return ctx
}

func (r *statementRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// listIDs are ids the shapes filter on.
type listIDs struct {
	bulkRun, recentRun, errRun int64
	recentLedger               int64 // an id inside the recent job's rows
}

// loadListTables loads the big tables with generate_series: 100 jobs with 1,000 runs each, one
// job ("recent") whose 1,000 ledger rows are the newest, a bulk job with 199,000 older rows, run
// errors, replay requests and audit rows; then ANALYZE, as autovacuum would soon.
func loadListTables(t *testing.T, pool *pgxpool.Pool) listIDs { return loadListTablesB(t, pool) }

func loadListTablesB(t testing.TB, pool *pgxpool.Pool) listIDs {
	t.Helper()
	ctx := context.Background()
	var ids listIDs
	steps := []string{
		`INSERT INTO job_settings (name) SELECT 'job-' || lpad(g::text, 3, '0') FROM generate_series(0, 99) g`,
		`INSERT INTO job_settings (name) VALUES ('bulk'), ('recent')`,
		`INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until, generation, finished_at, started_at)
		 SELECT 'job-' || lpad((g % 100)::text, 3, '0'),
			CASE WHEN g % 10 = 0 THEN 'FAILED' WHEN g % 997 = 0 THEN 'PAUSED' ELSE 'SUCCEEDED' END,
			'SCHEDULED', 'RESTART', 'scheduler', 'i', md5(g::text), 30, now(), g / 100 + 1, now(),
			now() - make_interval(secs => 100000 - g)
		 FROM generate_series(1, 100000) g`,
		`INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until, generation)
		 VALUES ('bulk', 'SUCCEEDED', 'MANUAL', 'RESTART', 't', 'i', 'b', 30, now(), 1),
		        ('recent', 'SUCCEEDED', 'MANUAL', 'RESTART', 't', 'i', 'r', 30, now(), 2),
		        ('job-001', 'RUNNING', 'MANUAL', 'RESTART', 't', 'i', 'a', 30, now() + interval '1 hour', 1000),
		        ('job-002', 'SUCCEEDED', 'SCHEDULED', 'RESTART', 't', 'rare', 'x', 30, now(), 1000)`,
		`INSERT INTO job_ledger (job_name, generation, target_key, state, idempotency_key, run_id)
		 SELECT 'bulk', 1, 't-' || lpad(g::text, 6, '0'),
			CASE WHEN g % 500 = 0 THEN 'AMBIGUOUS_EFFECT' WHEN g % 100 = 0 THEN 'TRANSIENT' ELSE 'CONFIRMED' END,
			md5(g::text), (SELECT id FROM job_runs WHERE job_name = 'bulk')
		 FROM generate_series(1, 199000) g`,
		`INSERT INTO job_ledger (job_name, generation, target_key, state, idempotency_key, run_id)
		 SELECT 'recent', 2, 't-' || lpad(g::text, 6, '0'), 'CONFIRMED', md5(g::text), (SELECT id FROM job_runs WHERE job_name = 'recent')
		 FROM generate_series(1, 1000) g`,
		`INSERT INTO job_run_errors (run_id, item_key, failure_class, message)
		 SELECT g % 100000 + 1, 'k' || g, 'TRANSIENT', 'timeout' FROM generate_series(1, 100000) g`,
		`INSERT INTO replay_requests (job_name, source_run_id, generation, scope, status, preflight, reason, requested_by)
		 SELECT 'job-' || lpad((g % 100)::text, 3, '0'), g, 1, 'FAILED',
			CASE WHEN g % 1000 = 0 THEN 'PENDING_APPROVAL' WHEN g % 777 = 0 THEN 'APPROVED' ELSE 'EXECUTED' END, '{}', 'r', 'u'
		 FROM generate_series(1, 50000) g`,
		`INSERT INTO audit_log (actor, action, target, outcome)
		 SELECT CASE WHEN g % 1000 = 0 THEN 'rare' ELSE 'u' END, CASE WHEN g % 700 = 0 THEN 'cancelRun' ELSE 'startJob' END,
			CASE WHEN g % 900 = 0 THEN 'run:' || g ELSE 'job:x' END, CASE WHEN g % 500 = 0 THEN 'FORBIDDEN' ELSE 'ok' END
		 FROM generate_series(1, 100000) g`,
		`ANALYZE job_settings, job_runs, job_ledger, job_run_errors, replay_requests, audit_log`,
	}
	for _, sql := range steps {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("load: %v\n%s", err, sql)
		}
	}
	err := pool.QueryRow(ctx, `SELECT (SELECT id FROM job_runs WHERE job_name = 'bulk'), (SELECT id FROM job_runs WHERE job_name = 'recent'),
		(SELECT min(id) + 500 FROM job_ledger WHERE job_name = 'recent'), 4242`).Scan(&ids.bulkRun, &ids.recentRun, &ids.recentLedger, &ids.errRun)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
