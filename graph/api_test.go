package graph_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/generated"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/server/httpapi"
)

// insertRuns adds n finished runs of job straight into the database.
func (b *bundle) insertRuns(job string, n int) {
	b.T.Helper()
	_, err := b.Pool.Exec(context.Background(), `INSERT INTO job_runs (job_name, status, trigger, mode, requested_by,
			instance, lease_token, lease_seconds, lease_until, generation, finished_at)
		SELECT $1, 'SUCCEEDED', 'MANUAL', 'RESUME', 'test', 'test', 'tok', 30, now(), 1, now() FROM generate_series(1, $2)`, job, n)
	if err != nil {
		b.T.Fatal(err)
	}
}

func TestRunsPagination(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "paged", n: 1}}, noRun: true})
	viewer := b.token(model.RoleViewer)
	b.insertRuns("paged", 25)

	type page struct {
		Runs struct {
			Edges []struct {
				Cursor string
				Node   struct{ ID string }
			}
			Nodes    []struct{ ID string }
			PageInfo struct {
				HasNextPage, HasPreviousPage bool
				StartCursor, EndCursor       *string
			}
		}
	}
	const q = `query($after: String, $first: Int) { runs(jobName: "paged", first: $first, after: $after) {
		edges { cursor node { id } } nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`
	seen := map[string]bool{}
	var after any
	var sizes []int
	var lastNum int64 = 1 << 62
	for range 5 {
		var p page
		i.post(t, viewer, q, map[string]any{"after": after, "first": 10}).decode(t, &p)
		sizes = append(sizes, len(p.Runs.Edges))
		if len(p.Runs.Nodes) != len(p.Runs.Edges) {
			t.Fatalf("nodes and edges differ: %d vs %d", len(p.Runs.Nodes), len(p.Runs.Edges))
		}
		for _, e := range p.Runs.Edges {
			if seen[e.Node.ID] {
				t.Fatalf("run %s on two pages", e.Node.ID)
			}
			seen[e.Node.ID] = true
			n, ok := graph.RunNumber(e.Node.ID)
			if !ok || n >= lastNum {
				t.Fatalf("runs not newest first: %d after %d", n, lastNum)
			}
			lastNum = n
		}
		if (after != nil) != p.Runs.PageInfo.HasPreviousPage {
			t.Errorf("hasPreviousPage = %v on a page with after = %v", p.Runs.PageInfo.HasPreviousPage, after)
		}
		if !p.Runs.PageInfo.HasNextPage {
			break
		}
		after = *p.Runs.PageInfo.EndCursor
	}
	if fmt.Sprint(sizes) != "[10 10 5]" || len(seen) != 25 {
		t.Fatalf("pages of %v covering %d runs; want [10 10 5] covering 25", sizes, len(seen))
	}

	// The default page is 20.
	var p page
	i.post(t, viewer, q, nil).decode(t, &p)
	if len(p.Runs.Edges) != graph.DefaultPageSize || !p.Runs.PageInfo.HasNextPage {
		t.Fatalf("default page: %d runs, hasNextPage %v", len(p.Runs.Edges), p.Runs.PageInfo.HasNextPage)
	}

	for name, vars := range map[string]map[string]any{
		"first above the cap":    {"first": 101},
		"first in the thousands": {"first": 10000},
		"negative first":         {"first": -1},
		"garbage cursor":         {"after": "not-a-cursor"},
		"cursor of another list": {"after": "YzE6YXVkaXQ6NQ"}, // c1:audit:5
	} {
		t.Run(name, func(t *testing.T) {
			r := i.post(t, viewer, q, vars)
			if r.code() != graph.CodeBadUserInput {
				t.Fatalf("code %q (%+v), want BAD_USER_INPUT", r.code(), r.Errors)
			}
		})
	}

	// Nested connections page the same way.
	var nested struct {
		Job struct {
			Runs struct {
				Nodes    []struct{ ID string }
				PageInfo struct{ HasNextPage bool }
			}
		}
	}
	i.post(t, viewer, `{ job(name: "paged") { runs(first: 3) { nodes { id } pageInfo { hasNextPage } } } }`, nil).decode(t, &nested)
	if len(nested.Job.Runs.Nodes) != 3 || !nested.Job.Runs.PageInfo.HasNextPage {
		t.Fatalf("job.runs(first: 3): %+v", nested.Job.Runs)
	}
}

// queryCounter counts the queries a pool runs.
// queryCounter counts the queries made on behalf of GraphQL requests (a context the test
// server marks, graphRequest), leaving out the runner's own background queries — heartbeats,
// alarms, the scheduler — which would otherwise land in a count now and then.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(graphRequest{}) != nil {
		c.n.Add(1)
	}
	return ctx
}
func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func TestJobsQueryIsNotNPlusOne(t *testing.T) {
	b := setup(t)
	const n = 20
	jobs := make([]runner.Job, n)
	for k := range jobs {
		jobs[k] = &gatedJob{name: fmt.Sprintf("job-%02d", k), n: 1}
	}
	counter := &queryCounter{}
	i := b.instance(instanceOpts{jobs: jobs, poolSize: -1, noRun: true, tracer: counter})
	viewer := b.token(model.RoleViewer)
	for k := range n {
		b.insertRuns(fmt.Sprintf("job-%02d", k), 3)
	}
	// Half the jobs have an active run.
	_, err := b.Pool.Exec(context.Background(), `UPDATE job_runs SET status = 'RUNNING', finished_at = NULL, lease_until = now() + interval '1 hour'
		WHERE id IN (SELECT max(id) FROM job_runs WHERE job_name < 'job-10' GROUP BY job_name)`)
	if err != nil {
		t.Fatal(err)
	}
	i.post(t, viewer, `{ me { name } }`, nil) // authenticates the token (cached afterwards)

	counter.n.Store(0)
	var data struct {
		Jobs struct {
			Nodes []struct {
				Name      string
				ActiveRun *struct {
					ID  string
					Job struct{ Name string }
				}
				LastRun *struct {
					Status string
					Job    struct{ Name string }
				}
			}
		}
	}
	i.post(t, viewer, `{ jobs(first: 100) { nodes { name activeRun { id job { name } } lastRun { status job { name } } } } }`, nil).decode(t, &data)
	queries := counter.n.Load()

	if len(data.Jobs.Nodes) != n {
		t.Fatalf("%d jobs, want %d", len(data.Jobs.Nodes), n)
	}
	active := 0
	for _, j := range data.Jobs.Nodes {
		if j.LastRun == nil || j.LastRun.Job.Name != j.Name {
			t.Fatalf("job %s: last run %+v", j.Name, j.LastRun)
		}
		if j.ActiveRun != nil {
			active++
			if j.ActiveRun.Job.Name != j.Name || j.LastRun.Status != "RUNNING" {
				t.Fatalf("job %s: active run %+v, last %+v", j.Name, j.ActiveRun, j.LastRun)
			}
		}
	}
	if active != 10 {
		t.Fatalf("%d jobs with an active run, want 10", active)
	}
	// jobs, active runs, last runs: one query each; every run's job is the page's own.
	// Without batching this is 1 + 2*20 (+ 2*20 for the runs' jobs).
	if queries > 3 {
		t.Fatalf("the jobs page took %d queries; want 3", queries)
	}
	t.Logf("jobs page with %d jobs: %d queries", n, queries)

	// A page of runs with their jobs: runs, then their jobs in one query.
	counter.n.Store(0)
	var runs struct {
		Runs struct {
			Nodes []struct{ Job struct{ Name string } }
		}
	}
	i.post(t, viewer, `{ runs(first: 40) { nodes { job { name } } } }`, nil).decode(t, &runs)
	if len(runs.Runs.Nodes) != 40 {
		t.Fatalf("%d runs", len(runs.Runs.Nodes))
	}
	if q := counter.n.Load(); q > 2 {
		t.Fatalf("a page of 40 runs with their jobs took %d queries", q)
	}
}

func TestStartJob(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	busy := &gatedJob{name: "busy", n: 1, gate: gate}
	other := &gatedJob{name: "other", n: 1, gate: gate}
	third := &gatedJob{name: "third", n: 1}
	i := b.instance(instanceOpts{jobs: []runner.Job{busy, other, third}, poolSize: 2})
	t.Cleanup(func() { close(gate) })
	op := b.token(model.RoleOperator)

	start := func(name string) (runID string, ues []userError) {
		var data struct {
			StartJob struct {
				Run        *struct{ ID, Status, RequestedBy string }
				UserErrors []userError
			}
		}
		i.post(t, op, `mutation($n: String!) { startJob(input: {name: $n, mode: RESTART}) {
			run { id status requestedBy } userErrors { code message field } } }`, map[string]any{"n": name}).decode(t, &data)
		if data.StartJob.Run != nil {
			if data.StartJob.Run.RequestedBy != b.tokenName(op) {
				t.Errorf("requestedBy %q, want the token's name", data.StartJob.Run.RequestedBy)
			}
			return data.StartJob.Run.ID, data.StartJob.UserErrors
		}
		return "", data.StartJob.UserErrors
	}

	id, ues := start("busy")
	if id == "" || len(ues) != 0 {
		t.Fatalf("first start: run %q, user errors %+v", id, ues)
	}
	if _, ues := start("busy"); len(ues) != 1 || ues[0].Code != "ALREADY_RUNNING" {
		t.Fatalf("second start: %+v, want ALREADY_RUNNING", ues)
	}
	if id, ues := start("other"); id == "" || len(ues) != 0 {
		t.Fatalf("start of a second job: run %q, user errors %+v", id, ues)
	}
	if _, ues := start("third"); len(ues) != 1 || ues[0].Code != "CAPACITY_EXCEEDED" {
		t.Fatalf("start with both slots busy: %+v, want CAPACITY_EXCEEDED", ues)
	}
	if _, ues := start("nope"); len(ues) != 1 || ues[0].Code != "NOT_FOUND" || ues[0].Field == nil || *ues[0].Field != "name" {
		t.Fatalf("unknown job: %+v, want NOT_FOUND on field name", ues)
	}
	if n := b.count(`SELECT count(*) FROM job_runs`); n != 2 {
		t.Fatalf("%d runs in the database, want 2 (refused starts write nothing)", n)
	}
	release(t, gate)
	release(t, gate)
	i.waitRunStatus(t, op, id, "SUCCEEDED")
}

func TestConcurrentStartsAcrossInstances(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	var instances []*instance
	for range 3 {
		instances = append(instances, b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "once", n: 1, gate: gate}}}))
	}
	t.Cleanup(func() { close(gate) }) // before the instances stop: lets the run finish
	op := b.token(model.RoleOperator)
	var started, refused atomic.Int32
	var wg sync.WaitGroup
	for _, i := range instances {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var data struct {
					StartJob struct {
						Run        *struct{ ID string }
						UserErrors []userError
					}
				}
				i.post(t, op, `mutation { startJob(input: {name: "once"}) { run { id } userErrors { code } } }`, nil).decode(t, &data)
				switch {
				case data.StartJob.Run != nil:
					started.Add(1)
				case len(data.StartJob.UserErrors) == 1 && data.StartJob.UserErrors[0].Code == "ALREADY_RUNNING":
					refused.Add(1)
				default:
					t.Errorf("unexpected answer: %+v", data.StartJob.UserErrors)
				}
			}()
		}
	}
	wg.Wait()
	if started.Load() != 1 || refused.Load() != 8 {
		t.Fatalf("%d started, %d ALREADY_RUNNING; want 1 and 8", started.Load(), refused.Load())
	}
}

func TestUpdateJobSchedule(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "sched", n: 1}}, noRun: true})
	op := b.token(model.RoleOperator)

	type job struct {
		Cron, Timezone string
		Enabled        bool
		NextFireTimes  []string
	}
	read := func() (job, int64) {
		var data struct{ Job job }
		i.post(t, op, `{ job(name: "sched") { cron timezone enabled nextFireTimes(n: 3) } }`, nil).decode(t, &data)
		var version int64
		if err := b.Pool.QueryRow(context.Background(), `SELECT version FROM job_settings WHERE name = 'sched'`).Scan(&version); err != nil {
			t.Fatal(err)
		}
		return data.Job, version
	}
	before, v0 := read()

	const m = `mutation($in: UpdateJobScheduleInput!) { updateJobSchedule(input: $in) {
		job { cron timezone enabled nextFireTimes(n: 3) } userErrors { code message field } } }`
	update := func(in map[string]any) (*job, []userError) {
		var data struct {
			UpdateJobSchedule struct {
				Job        *job
				UserErrors []userError
			}
		}
		i.post(t, op, m, map[string]any{"in": in}).decode(t, &data)
		return data.UpdateJobSchedule.Job, data.UpdateJobSchedule.UserErrors
	}

	for _, tc := range []struct {
		in    map[string]any
		code  string
		field string
	}{
		{map[string]any{"name": "sched", "cron": "not a cron", "enabled": false}, "INVALID_CRON", "cron"},
		{map[string]any{"name": "sched", "cron": "*/5 * * * *", "timezone": "Mars/Olympus"}, "INVALID_TIMEZONE", "timezone"},
		{map[string]any{"name": "sched", "leaseSeconds": -3}, "INVALID_INPUT", "leaseSeconds"},
		{map[string]any{"name": "ghost", "cron": "@daily"}, "NOT_FOUND", "name"},
	} {
		j, ues := update(tc.in)
		if j != nil || len(ues) != 1 || ues[0].Code != tc.code || ues[0].Field == nil || *ues[0].Field != tc.field {
			t.Errorf("update %v: job %+v, user errors %+v; want %s on %s", tc.in, j, ues, tc.code, tc.field)
		}
	}
	after, v1 := read()
	if fmt.Sprint(after) != fmt.Sprint(before) || v1 != v0 {
		t.Fatalf("refused updates changed the job: %+v (version %d) -> %+v (version %d)", before, v0, after, v1)
	}

	j, ues := update(map[string]any{"name": "sched", "cron": "0 4 * * *", "timezone": "Europe/Paris"})
	if len(ues) != 0 || j == nil || j.Cron != "0 4 * * *" || j.Timezone != "Europe/Paris" || len(j.NextFireTimes) != 3 {
		t.Fatalf("valid update: job %+v, user errors %+v", j, ues)
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, ft := range j.NextFireTimes {
		ts, err := time.Parse(time.RFC3339, ft)
		if err != nil {
			t.Fatal(err)
		}
		if h := ts.In(paris).Hour(); h != 4 {
			t.Fatalf("fire %s is at %d:00 in Paris, want 4:00", ft, h)
		}
	}

	// The schedule editor's preview.
	var preview struct {
		Good, Bad struct {
			Valid         bool
			NextFireTimes []string
			UserErrors    []userError
		}
	}
	i.post(t, op, `{ good: cronPreview(cron: "@hourly", n: 4) { valid nextFireTimes userErrors { code } }
		bad: cronPreview(cron: "61 * * * *") { valid nextFireTimes userErrors { code field } } }`, nil).decode(t, &preview)
	if !preview.Good.Valid || len(preview.Good.NextFireTimes) != 4 {
		t.Errorf("preview of @hourly: %+v", preview.Good)
	}
	if preview.Bad.Valid || len(preview.Bad.UserErrors) != 1 || preview.Bad.UserErrors[0].Code != "INVALID_CRON" {
		t.Errorf("preview of an invalid cron: %+v", preview.Bad)
	}
}

func TestHTTPRefusals(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{
		jobs: []runner.Job{&gatedJob{name: "h", n: 1}}, noRun: true,
		graph: func(c *httpapi.Config) { c.MaxBodyBytes = 2048 },
	})
	op := b.token(model.RoleOperator)

	t.Run("GET runs queries", func(t *testing.T) {
		r := i.get(t, op, `{ job(name: "h") { name } }`)
		if r.status != http.StatusOK || r.code() != "" {
			t.Fatalf("GET query: HTTP %d, %+v", r.status, r.Errors)
		}
	})
	t.Run("GET refuses mutations", func(t *testing.T) {
		r := i.get(t, op, `mutation { startJob(input: {name: "h"}) { run { id } } }`)
		if r.status == http.StatusOK || len(r.Errors) == 0 {
			t.Fatalf("GET mutation: HTTP %d, %+v", r.status, r)
		}
		if n := b.count(`SELECT count(*) FROM job_runs`); n != 0 {
			t.Fatalf("a GET mutation started %d run(s)", n)
		}
	})
	t.Run("oversized body", func(t *testing.T) {
		big := `{ me { name } }` + strings.Repeat(" ", 4096)
		r := i.post(t, op, big, nil)
		if r.status != http.StatusRequestEntityTooLarge || r.code() != graph.CodePayloadTooLarge {
			t.Fatalf("HTTP %d, code %q", r.status, r.code())
		}
	})
	t.Run("malformed JSON", func(t *testing.T) {
		r := i.do(t, http.MethodPost, i.url, op, strings.NewReader(`{"query": `), nil)
		if r.status != http.StatusBadRequest || len(r.Errors) == 0 {
			t.Fatalf("HTTP %d, %+v", r.status, r.Errors)
		}
	})
	t.Run("too deep", func(t *testing.T) {
		// job > lastRun > job > ... : 14 levels.
		deep := `{ job(name: "h") ` + strings.Repeat(`{ lastRun { job `, 6) + `{ name }` + strings.Repeat(` } }`, 6) + ` }`
		r := i.post(t, op, deep, nil)
		if r.code() != graph.CodeDepthLimit {
			t.Fatalf("code %q (%+v), want %s", r.code(), r.Errors, graph.CodeDepthLimit)
		}
		shallow := `{ job(name: "h") { lastRun { job { name } } } }`
		if r := i.post(t, op, shallow, nil); r.code() != "" {
			t.Fatalf("shallow query refused: %+v", r.Errors)
		}
	})
	t.Run("too complex", func(t *testing.T) {
		costly := `{ jobs { nodes { runs(first: 100) { nodes { errors(first: 100) { nodes { message } } } } } } }`
		r := i.post(t, op, costly, nil)
		if r.code() != "COMPLEXITY_LIMIT_EXCEEDED" {
			t.Fatalf("code %q (%+v), want COMPLEXITY_LIMIT_EXCEEDED", r.code(), r.Errors)
		}
	})
	t.Run("too many mutations", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("mutation {")
		for k := range 11 {
			fmt.Fprintf(&b, ` m%d: pauseJob(input: {name: "nope"}) { userErrors { code } }`, k)
		}
		b.WriteString(" }")
		if r := i.post(t, op, b.String(), nil); r.code() != graph.CodeTooManyFields {
			t.Fatalf("code %q (%+v), want %s", r.code(), r.Errors, graph.CodeTooManyFields)
		}
	})
	t.Run("subscription over POST", func(t *testing.T) {
		r := i.post(t, op, `subscription { alertRaised { id } }`, nil)
		if r.code() != graph.CodeBadRequest {
			t.Fatalf("code %q (%+v), want %s", r.code(), r.Errors, graph.CodeBadRequest)
		}
	})
	// The server is healthy after all of that.
	if r := i.post(t, op, `{ me { name role } }`, nil); r.code() != "" {
		t.Fatalf("after the refusals: %+v", r.Errors)
	}
}

func TestAuthentication(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{noRun: true})
	viewer := b.token(model.RoleViewer)

	revoked := b.token(model.RoleAdmin)
	if _, err := b.Pool.Exec(context.Background(), `UPDATE api_tokens SET revoked_at = now() WHERE token_hash = $1`, httpapi.HashToken(revoked)); err != nil {
		t.Fatal(err)
	}
	for name, token := range map[string]string{
		"no token":      "",
		"unknown token": "bt_" + strings.Repeat("A", 43),
		"not a token":   "hunter2",
		"revoked token": revoked,
	} {
		t.Run(name, func(t *testing.T) {
			r := i.post(t, token, `{ me { name } }`, nil)
			if r.status != http.StatusUnauthorized || r.code() != graph.CodeUnauthenticated {
				t.Fatalf("HTTP %d, code %q", r.status, r.code())
			}
		})
	}
	var me struct{ Me struct{ Name, Role string } }
	i.post(t, viewer, `{ me { name role } }`, nil).decode(t, &me)
	if me.Me.Role != "VIEWER" || me.Me.Name != b.tokenName(viewer) {
		t.Fatalf("me = %+v", me.Me)
	}
	var used *time.Time
	if err := b.Pool.QueryRow(context.Background(), `SELECT last_used_at FROM api_tokens WHERE token_hash = $1`, httpapi.HashToken(viewer)).Scan(&used); err != nil || used == nil {
		t.Fatalf("last_used_at not recorded: %v %v", used, err)
	}
}

// auditRows returns the audit rows of action by actor with outcome.
func (b *bundle) auditRows(actor, action, outcome string) int {
	return b.count(`SELECT count(*) FROM audit_log WHERE actor = $1 AND action = $2 AND outcome = $3`, actor, action, outcome)
}

func TestRoles(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "r", n: 1}}, poolSize: 2})
	tokens := map[model.Role]string{}
	for _, role := range []model.Role{model.RoleViewer, model.RoleOperator, model.RoleApprover, model.RoleAdmin} {
		tokens[role] = b.token(role)
	}
	// Each mutation with the least role it needs; the input is valid enough to pass the
	// directive (the answer may still be a user error).
	mutations := []struct {
		name, query string
		need        model.Role
	}{
		{"startJob", `mutation { startJob(input: {name: "nope"}) { userErrors { code } } }`, model.RoleOperator},
		{"cancelRun", `mutation { cancelRun(input: {runId: "UnVuOjk5OTk="}) { userErrors { code } } }`, model.RoleOperator},
		{"updateJobSchedule", `mutation { updateJobSchedule(input: {name: "nope"}) { userErrors { code } } }`, model.RoleOperator},
		{"updateJobAutoResume", `mutation { updateJobAutoResume(input: {name: "nope"}) { userErrors { code } } }`, model.RoleOperator},
		{"pauseJob", `mutation { pauseJob(input: {name: "nope"}) { userErrors { code } } }`, model.RoleOperator},
		{"resumeJob", `mutation { resumeJob(input: {name: "nope"}) { userErrors { code } } }`, model.RoleOperator},
		{"setMaintenance", `mutation { setMaintenance(input: {paused: false}) { maintenance userErrors { code } } }`, model.RoleOperator},
		{"requestReplay", `mutation { requestReplay(input: {runId: "UnVuOjk5OTk=", scope: TRANSIENT, reason: "r"}) { userErrors { code } } }`, model.RoleOperator},
		{"resolveAmbiguous", `mutation { resolveAmbiguous(input: {entryId: "TGVkZ2VyRW50cnk6OTk5OQ==", resolution: NOT_APPLIED}) { userErrors { code } } }`, model.RoleOperator},
		{"reconcile", `mutation { reconcileEntry(input: {entryId: "TGVkZ2VyRW50cnk6OTk5OQ=="}) { userErrors { code } } }`, model.RoleOperator},
		{"approveReplay", `mutation { approveReplay(input: {requestId: "UmVwbGF5UmVxdWVzdDo5OTk5"}) { userErrors { code } } }`, model.RoleApprover},
		{"rejectReplay", `mutation { rejectReplay(input: {requestId: "UmVwbGF5UmVxdWVzdDo5OTk5"}) { userErrors { code } } }`, model.RoleApprover},
		{"requestRestart", `mutation { requestRestart(input: {name: "nope", reason: "r"}) { userErrors { code } } }`, model.RoleOperator},
		{"executeReplay", `mutation { executeReplay(input: {requestId: "UmVwbGF5UmVxdWVzdDo5OTk5"}) { userErrors { code } } }`, model.RoleApprover},
	}
	for _, m := range mutations {
		for role, token := range tokens {
			r := i.post(t, token, m.query, nil)
			allowed := role.AtLeast(m.need)
			switch {
			case allowed && r.code() == graph.CodeForbidden:
				t.Errorf("%s as %s: FORBIDDEN, want allowed", m.name, role)
			case !allowed && r.code() != graph.CodeForbidden:
				t.Errorf("%s as %s: code %q, want FORBIDDEN", m.name, role, r.code())
			case !allowed:
				if n := b.auditRows(b.tokenName(token), m.name, graph.CodeForbidden); n != 1 {
					t.Errorf("%s as %s: %d FORBIDDEN audit rows, want 1", m.name, role, n)
				}
			}
		}
	}
	if n := b.count(`SELECT count(*) FROM job_runs`); n != 0 {
		t.Fatalf("refused mutations started %d runs", n)
	}

	// The audit log is for operators, by field and by node.
	const audit = `{ auditLog(first: 5) { nodes { id actor action outcome } } }`
	if r := i.post(t, tokens[model.RoleViewer], audit, nil); r.code() != graph.CodeForbidden {
		t.Errorf("viewer reads the audit log: code %q", r.code())
	}
	var log struct {
		AuditLog struct {
			Nodes []struct{ ID, Actor, Action, Outcome string }
		}
	}
	i.post(t, tokens[model.RoleOperator], audit, nil).decode(t, &log)
	if len(log.AuditLog.Nodes) == 0 {
		t.Fatal("operator sees no audit entries")
	}
	node := `{ node(id: "` + log.AuditLog.Nodes[0].ID + `") { id } }`
	if r := i.post(t, tokens[model.RoleViewer], node, nil); r.code() != graph.CodeForbidden {
		t.Errorf("viewer reads an audit entry by node: code %q", r.code())
	}
	var byNode struct{ Node *struct{ ID string } }
	i.post(t, tokens[model.RoleOperator], node, nil).decode(t, &byNode)
	if byNode.Node == nil || byNode.Node.ID != log.AuditLog.Nodes[0].ID {
		t.Errorf("operator reads an audit entry by node: %+v", byNode.Node)
	}

	// Introspection is for operators.
	const introspect = `{ __schema { queryType { name } } }`
	if r := i.post(t, tokens[model.RoleViewer], introspect, nil); r.code() != graph.CodeForbidden {
		t.Errorf("viewer introspects: code %q (%+v), want FORBIDDEN", r.code(), r.Errors)
	}
	if r := i.post(t, tokens[model.RoleViewer], `query { ...F } fragment F on Query { __type(name: "Run") { name } }`, nil); r.code() != graph.CodeForbidden {
		t.Errorf("viewer introspects through a fragment: code %q", r.code())
	}
	if r := i.post(t, tokens[model.RoleOperator], introspect, nil); r.code() != "" {
		t.Errorf("operator may not introspect: %+v", r.Errors)
	}
}

func TestDevModeOpensIntrospection(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{noRun: true, graph: func(c *httpapi.Config) { c.GraphQL.DevMode = true }})
	viewer := b.token(model.RoleViewer)
	if r := i.post(t, viewer, `{ __schema { queryType { name } } }`, nil); r.code() != "" {
		t.Fatalf("viewer may not introspect in dev mode: %+v", r.Errors)
	}
}

func TestEveryMutationNeedsARole(t *testing.T) {
	t.Parallel()
	// A mutation without @hasRole would be open to viewers: fail here rather than in review.
	schema := generated.NewExecutableSchema(generated.Config{}).Schema()
	for _, f := range schema.Mutation.Fields {
		d := f.Directives.ForName("hasRole")
		if d == nil {
			t.Errorf("Mutation.%s has no @hasRole", f.Name)
			continue
		}
		role := model.Role(d.Arguments.ForName("role").Value.Raw)
		if !role.AtLeast(model.RoleOperator) {
			t.Errorf("Mutation.%s is open to %s", f.Name, role)
		}
	}
}

func TestMutationRateLimit(t *testing.T) {
	b := setup(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	i := b.instance(instanceOpts{noRun: true, graph: func(c *httpapi.Config) {
		c.GraphQL.MutationRatePerMinute, c.GraphQL.MutationBurst, c.GraphQL.NowFunc = 6, 3, clock
	}})
	op, other := b.token(model.RoleOperator), b.token(model.RoleOperator)
	pause := `mutation { pauseJob(input: {name: "nope"}) { userErrors { code } } }`
	for k := range 3 {
		if r := i.post(t, op, pause, nil); r.code() != "" {
			t.Fatalf("mutation %d refused: %+v", k+1, r.Errors)
		}
	}
	if r := i.post(t, op, pause, nil); r.code() != graph.CodeRateLimited {
		t.Fatalf("4th mutation in a burst of 3: code %q, want RATE_LIMITED", r.code())
	}
	if n := b.auditRows(b.tokenName(op), "pauseJob", graph.CodeRateLimited); n != 1 {
		t.Fatalf("%d RATE_LIMITED audit rows, want 1", n)
	}
	// Queries are not limited, nor are other tokens.
	if r := i.post(t, op, `{ me { name } }`, nil); r.code() != "" {
		t.Fatalf("query after the limit: %+v", r.Errors)
	}
	if r := i.post(t, other, pause, nil); r.code() != "" {
		t.Fatalf("another token is limited too: %+v", r.Errors)
	}
	// 6 a minute: one more after 10 seconds.
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	if r := i.post(t, op, pause, nil); r.code() != "" {
		t.Fatalf("after the bucket refilled: %+v", r.Errors)
	}
}

func TestOrigins(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{noRun: true, graph: func(c *httpapi.Config) {
		c.AllowedOrigins = []string{"https://console.example.com"}
	}})
	op := b.token(model.RoleOperator)
	q := strings.NewReader(`{"query": "{ me { name } }"}`)
	r := i.do(t, http.MethodPost, i.url, op, q, http.Header{"Origin": {"https://evil.example.com"}})
	if r.status != http.StatusForbidden || r.code() != graph.CodeForbidden {
		t.Fatalf("foreign origin POST: HTTP %d, code %q", r.status, r.code())
	}
	q = strings.NewReader(`{"query": "{ me { name } }"}`)
	r = i.do(t, http.MethodPost, i.url, op, q, http.Header{"Origin": {"https://console.example.com"}})
	if r.status != http.StatusOK || r.code() != "" {
		t.Fatalf("allowed origin POST: HTTP %d, %+v", r.status, r.Errors)
	}
	// A browser's preflight from the allowed origin.
	req, _ := http.NewRequest(http.MethodOptions, i.url, nil)
	req.Header.Set("Origin", "https://console.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://console.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: HTTP %d, headers %v", resp.StatusCode, resp.Header)
	}
	// WebSocket upgrades from a foreign origin are refused before the upgrade.
	_, wsResp, err := i.dialWS(t, protoTransportWS, http.Header{"Origin": {"https://evil.example.com"}})
	if err == nil || wsResp == nil || wsResp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin websocket: err %v, response %v", err, wsResp)
	}
}

func TestNodeAndLookups(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "n", n: 2}}})
	viewer, op := b.token(model.RoleViewer), b.token(model.RoleOperator)
	id := i.startJob(t, op, "n")
	i.waitRunStatus(t, viewer, id, "SUCCEEDED")

	var data struct {
		Node *struct {
			Typename string `json:"__typename"`
			ID       string
			Status   string
			Progress struct {
				Total, Processed, Succeeded int
				Percent                     float64
			}
			Job    struct{ ID, Name string }
			Events []struct{ Kind string }
		}
		Job  struct{ ID string }
		None *struct{ ID string }
	}
	i.post(t, viewer, `query($id: ID!) {
		node(id: $id) { __typename id ... on Run { status progress { total processed succeeded percent } job { id name } events { kind } } }
		job(name: "n") { id }
		none: run(id: "UnVuOjk5OTk5OQ==") { id } }`, map[string]any{"id": id}).decode(t, &data)
	n := data.Node
	if n == nil || n.Typename != "Run" || n.ID != id || n.Status != "SUCCEEDED" || n.Job.Name != "n" {
		t.Fatalf("node(run) = %+v", n)
	}
	if n.Progress.Total != 2 || n.Progress.Processed != 2 || n.Progress.Succeeded != 2 || n.Progress.Percent != 100 {
		t.Fatalf("progress = %+v", n.Progress)
	}
	if len(n.Events) != 3 || n.Events[2].Kind != "FINISHED" {
		t.Fatalf("events = %+v", n.Events)
	}
	if data.None != nil {
		t.Fatalf("a missing run is %+v, want null", data.None)
	}
	var job struct {
		Node *struct {
			Name string
		}
	}
	i.post(t, viewer, `query($id: ID!) { node(id: $id) { ... on Job { name } } }`, map[string]any{"id": data.Job.ID}).decode(t, &job)
	if job.Node == nil || job.Node.Name != "n" {
		t.Fatalf("node(job) = %+v", job.Node)
	}
	if r := i.post(t, viewer, `{ node(id: "garbage") { id } }`, nil); r.code() != graph.CodeBadUserInput {
		t.Fatalf("node(garbage): code %q", r.code())
	}

	// The run's ledger, a page at a time, oldest first.
	type ledgerPage struct {
		Ledger struct {
			Nodes []struct {
				ID, TargetKey, State string
				Run                  struct{ ID string }
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
	}
	const lq = `query($run: ID, $after: String) { ledger(jobName: "n", runId: $run, first: 1, after: $after) {
		nodes { id targetKey state run { id } } pageInfo { hasNextPage endCursor } } }`
	var targets []string
	var after any
	var entryID string
	for {
		var p ledgerPage
		i.post(t, viewer, lq, map[string]any{"run": id, "after": after}).decode(t, &p)
		for _, e := range p.Ledger.Nodes {
			if e.State != "CONFIRMED" || e.Run.ID != id {
				t.Fatalf("ledger entry %+v", e)
			}
			targets, entryID = append(targets, e.TargetKey), e.ID
		}
		if !p.Ledger.PageInfo.HasNextPage {
			break
		}
		after = *p.Ledger.PageInfo.EndCursor
	}
	if fmt.Sprint(targets) != "[t1 t2]" {
		t.Fatalf("ledger targets %v, want [t1 t2]", targets)
	}
	var more struct {
		Entry *struct{ TargetKey string }
		Run   struct {
			LedgerSummary []struct {
				State string
				Count int
			}
		}
		Preflight struct {
			JobName string
			Run     struct{ ID string }
			Blocked bool
		}
		ReplayRequests struct{ Nodes []struct{ ID string } }
	}
	i.post(t, viewer, `query($id: ID!, $entry: ID!) {
		entry: node(id: $entry) { ... on LedgerEntry { targetKey } }
		run(id: $id) { ledgerSummary { state count } }
		preflight: replayPreflight(runId: $id, scope: TRANSIENT) { jobName run { id } blocked }
		replayRequests(first: 5) { nodes { id } } }`, map[string]any{"id": id, "entry": entryID}).decode(t, &more)
	if more.Entry == nil || more.Entry.TargetKey != "t2" {
		t.Errorf("node(ledger entry) = %+v", more.Entry)
	}
	if fmt.Sprint(more.Run.LedgerSummary) != "[{CONFIRMED 2}]" {
		t.Errorf("ledgerSummary = %+v", more.Run.LedgerSummary)
	}
	if more.Preflight.JobName != "n" || more.Preflight.Run.ID != id {
		t.Errorf("replayPreflight = %+v", more.Preflight)
	}
	if len(more.ReplayRequests.Nodes) != 0 {
		t.Errorf("replayRequests = %+v", more.ReplayRequests)
	}
}

func TestCancelRun(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	reached := make(chan int, 3)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "c", n: 3, gate: gate, reached: reached}}})
	t.Cleanup(func() { close(gate) })
	op := b.token(model.RoleOperator)
	id := i.startJob(t, op, "c")
	<-reached // the first item is under way: the cancel lands while it runs
	type payload struct {
		CancelRun struct {
			Run *struct {
				CancelRequested   bool
				CancelRequestedBy *string
			}
			UserErrors []userError
		}
	}
	const m = `mutation($id: ID!) { cancelRun(input: {runId: $id}) { run { cancelRequested cancelRequestedBy } userErrors { code field } } }`
	var p payload
	i.post(t, op, m, map[string]any{"id": id}).decode(t, &p)
	if p.CancelRun.Run == nil || !p.CancelRun.Run.CancelRequested || p.CancelRun.Run.CancelRequestedBy == nil {
		t.Fatalf("cancel: %+v", p.CancelRun)
	}
	release(t, gate)
	i.waitRunStatus(t, op, id, "CANCELLED")

	p = payload{}
	i.post(t, op, m, map[string]any{"id": id}).decode(t, &p)
	if len(p.CancelRun.UserErrors) != 1 || p.CancelRun.UserErrors[0].Code != "NOT_ACTIVE" {
		t.Fatalf("cancel a finished run: %+v", p.CancelRun)
	}
	p = payload{}
	i.post(t, op, m, map[string]any{"id": "not-an-id"}).decode(t, &p)
	if len(p.CancelRun.UserErrors) != 1 || p.CancelRun.UserErrors[0].Code != "INVALID_INPUT" {
		t.Fatalf("cancel with a malformed id: %+v", p.CancelRun)
	}
	testenv.Eventually(t, 5*time.Second, "the refusal to be audited", func() bool {
		return b.auditRows(b.tokenName(op), "cancelRun", "INVALID_INPUT") == 1
	})
}

func TestReplayNeedsASecondPerson(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "payout", n: 2, risk: bt.RiskHigh}}})
	admin, approver := b.token(model.RoleAdmin), b.token(model.RoleApprover)
	id := i.startJob(t, admin, "payout")
	i.waitRunStatus(t, admin, id, "SUCCEEDED")

	type request struct {
		ID, Status, RequestedBy string
		DecidedBy               *string
		ReplayRun               *struct{ ID string }
		Preflight               struct{ RequiresApproval bool }
	}
	const fields = `id status requestedBy decidedBy replayRun { id } preflight { requiresApproval }`
	var req struct {
		RequestReplay struct {
			ReplayRequest *request
			UserErrors    []userError
		}
	}
	const m = `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { replayRequest { ` + fields + ` } userErrors { code field } } }`
	i.post(t, admin, m, map[string]any{"in": map[string]any{"runId": id, "scope": "FULL", "reason": "provider outage"}}).decode(t, &req)
	if ues := req.RequestReplay.UserErrors; len(ues) != 1 || ues[0].Code != "APPROVAL_REQUIRED" || req.RequestReplay.ReplayRequest != nil {
		t.Fatalf("HIGH-risk replay without a compensation reference: %+v", req.RequestReplay)
	}
	i.post(t, admin, m, map[string]any{"in": map[string]any{"runId": id, "scope": "FULL", "reason": "provider outage",
		"compensationRef": "RUNBOOK-12"}}).decode(t, &req)
	r := req.RequestReplay.ReplayRequest
	if r == nil || r.Status != "PENDING_APPROVAL" || !r.Preflight.RequiresApproval || r.RequestedBy != b.tokenName(admin) {
		t.Fatalf("request: %+v (%+v)", r, req.RequestReplay.UserErrors)
	}

	var dec struct {
		ApproveReplay struct {
			ReplayRequest *request
			Run           *struct{ ID string }
			UserErrors    []userError
		}
	}
	const approve = `mutation($id: ID!) { approveReplay(input: {requestId: $id, note: "ok"}) { replayRequest { ` + fields + ` } run { id } userErrors { code } } }`
	i.post(t, admin, approve, map[string]any{"id": r.ID}).decode(t, &dec)
	if ues := dec.ApproveReplay.UserErrors; len(ues) != 1 || ues[0].Code != "SELF_APPROVAL" {
		t.Fatalf("self-approval: %+v", dec.ApproveReplay)
	}
	i.post(t, approver, approve, map[string]any{"id": r.ID}).decode(t, &dec)
	got := dec.ApproveReplay.ReplayRequest
	if len(dec.ApproveReplay.UserErrors) != 0 || got == nil || got.Status != "EXECUTED" || got.DecidedBy == nil ||
		*got.DecidedBy != b.tokenName(approver) || dec.ApproveReplay.Run == nil || got.ReplayRun == nil || got.ReplayRun.ID != dec.ApproveReplay.Run.ID {
		t.Fatalf("approval by a second person: %+v", dec.ApproveReplay)
	}
	i.waitRunStatus(t, admin, dec.ApproveReplay.Run.ID, "SUCCEEDED")

	var list struct {
		ReplayRequests struct{ Nodes []request }
	}
	i.post(t, admin, `{ replayRequests(status: [EXECUTED]) { nodes { `+fields+` } } }`, nil).decode(t, &list)
	if len(list.ReplayRequests.Nodes) != 1 || list.ReplayRequests.Nodes[0].ID != r.ID {
		t.Fatalf("replayRequests(EXECUTED) = %+v", list.ReplayRequests.Nodes)
	}
	if n := b.auditRows(b.tokenName(admin), "approveReplay", "SELF_APPROVAL"); n != 1 {
		t.Fatalf("%d SELF_APPROVAL audit rows, want 1", n)
	}
}
