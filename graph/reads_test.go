package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// jobsPage is the shape of a JobConnection in a response.
type jobsPage struct {
	Edges []struct {
		Cursor string
		Node   struct{ Name string }
	}
	Nodes    []struct{ Name string }
	PageInfo struct {
		HasNextPage, HasPreviousPage bool
		StartCursor, EndCursor       *string
	}
}

func manyJobs(n int) []runner.Job {
	jobs := make([]runner.Job, n)
	for k := range jobs {
		jobs[k] = &gatedJob{name: fmt.Sprintf("job-%03d", k), n: 1}
	}
	return jobs
}

// jobs is a Relay connection: keyset pages by name, opaque cursors, bounded first.
func TestJobsConnection(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: manyJobs(25), poolSize: -1, noRun: true})
	viewer := b.token(model.RoleViewer)
	const q = `query($first: Int, $after: String) { jobs(first: $first, after: $after) {
		edges { cursor node { name } } nodes { name } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`

	var names []string
	var after any
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("more than 3 pages of 10 for 25 jobs")
		}
		var data struct{ Jobs jobsPage }
		i.post(t, viewer, q, map[string]any{"first": 10, "after": after}).decode(t, &data)
		p := data.Jobs
		if len(p.Edges) != len(p.Nodes) || p.PageInfo.HasPreviousPage != (after != nil) {
			t.Fatalf("page %d: %+v", pages, p)
		}
		for k, e := range p.Edges {
			if e.Node.Name != p.Nodes[k].Name {
				t.Fatalf("edge %d is %s, node %s", k, e.Node.Name, p.Nodes[k].Name)
			}
			names = append(names, e.Node.Name)
		}
		if len(p.Edges) > 0 && *p.PageInfo.EndCursor != p.Edges[len(p.Edges)-1].Cursor {
			t.Fatalf("endCursor %s is not the last edge's", *p.PageInfo.EndCursor)
		}
		if !p.PageInfo.HasNextPage {
			break
		}
		after = *p.PageInfo.EndCursor
	}
	if len(names) != 25 {
		t.Fatalf("%d jobs over the pages, want 25: %v", len(names), names)
	}
	for k, n := range names {
		if want := fmt.Sprintf("job-%03d", k); n != want {
			t.Fatalf("job %d is %s, want %s (ordered by name, none twice)", k, n, want)
		}
	}
	// Without first: the default page.
	var def struct{ Jobs jobsPage }
	i.post(t, viewer, `{ jobs { nodes { name } pageInfo { hasNextPage } } }`, nil).decode(t, &def)
	if len(def.Jobs.Nodes) != graph.DefaultPageSize || !def.Jobs.PageInfo.HasNextPage {
		t.Fatalf("default page: %d jobs, next %v", len(def.Jobs.Nodes), def.Jobs.PageInfo.HasNextPage)
	}
	// Bad input is a coded error, not a page.
	var runsCursor struct {
		Runs struct{ PageInfo struct{ EndCursor *string } }
	}
	b.insertRuns("job-000", 2)
	i.post(t, viewer, `{ runs(first: 1) { pageInfo { endCursor } } }`, nil).decode(t, &runsCursor)
	for _, vars := range []map[string]any{
		{"first": graph.MaxPageSize + 1},
		{"first": -1},
		{"after": "not-a-cursor"},
		{"after": *runsCursor.Runs.PageInfo.EndCursor}, // a cursor of another list
	} {
		r := i.post(t, viewer, q, vars)
		if r.code() != graph.CodeBadUserInput {
			t.Errorf("jobs(%v): code %q (%+v), want %s", vars, r.code(), r.Errors, graph.CodeBadUserInput)
		}
	}
}

// jobsFieldsQuery reads two pages of jobs (aliased, in one operation) with every per-job field
// that reads the database, and the per-run fields of their runs.
const jobsFieldsQuery = `query($n: Int!, $after: String, $runs: Int, $failed: [RunStatus!]) {
  a: jobs(first: $n) { nodes { ...J } }
  b: jobs(first: $n, after: $after) { edges { cursor node { ...J } } }
}
fragment J on Job {
  name
  leaseSeconds
  nextFireTimes(n: 2)
  ledgerSummary { state count }
  activeRun { id job { name } errors(first: 5) { nodes { message } } ledgerSummary { state count } }
  lastRun { id status job { name } errors(first: 5) { nodes { message } } ledgerSummary { state count } }
  runs(first: $runs) {
    nodes { id job { name } errors(first: 2) { nodes { itemKey message } } ledgerSummary { state count } }
    pageInfo { hasNextPage }
  }
  failed: runs(first: 2, status: $failed) { nodes { id } }
}`

type jobFields struct {
	Name          string
	LedgerSummary []struct {
		State string
		Count int
	}
	ActiveRun *struct{ ID string }
	LastRun   *struct {
		ID     string
		Status string
		Job    struct{ Name string }
		Errors struct{ Nodes []struct{ Message string } }
	}
	Runs struct {
		Nodes []struct {
			ID     string
			Errors struct {
				Nodes []struct{ ItemKey, Message string }
			}
		}
		PageInfo struct{ HasNextPage bool }
	}
	Failed struct{ Nodes []struct{ ID string } }
}

// A query over 200 jobs with every per-object field costs as many SQL statements as the same
// query over 20: each field is one batched statement per page, not one per job or run.
func TestJobsPageCostsFixedStatements(t *testing.T) {
	b := setup(t)
	const n = 200
	counter := &queryCounter{}
	i := b.instance(instanceOpts{jobs: manyJobs(n), poolSize: -1, noRun: true, tracer: counter,
		graph: func(c *httpapi.Config) { c.GraphQL.MaxComplexity = 1 << 30 }})
	viewer := b.token(model.RoleViewer)
	ctx := context.Background()
	// Four runs per job; the newest of every tenth job RUNNING, the oldest FAILED with two
	// error rows; ledger counts of each generation and run.
	for _, sql := range []string{
		`INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until, generation, finished_at)
			SELECT name, CASE WHEN k = 1 THEN 'FAILED' ELSE 'SUCCEEDED' END, 'MANUAL', 'RESUME', 'test', 'test', 'tok', 30, now(), 1, now()
			FROM job_settings, generate_series(1, 4) AS k ORDER BY name, k`,
		`UPDATE job_runs SET status = 'RUNNING', finished_at = NULL, lease_until = now() + interval '1 hour'
			WHERE id IN (SELECT max(id) FROM job_runs WHERE right(job_name, 1) = '0' GROUP BY job_name)`,
		`INSERT INTO job_run_errors (run_id, item_key, failure_class, message, attempt)
			SELECT id, 't' || k, 'TRANSIENT', 'failed ' || k, 1 FROM job_runs, generate_series(1, 2) AS k WHERE status = 'FAILED'`,
		`INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n)
			SELECT job_name, 1, 0, 'CONFIRMED', 7 FROM job_runs GROUP BY job_name
			UNION ALL SELECT job_name, 1, id, 'CONFIRMED', 3 FROM job_runs`,
	} {
		if _, err := b.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	i.post(t, viewer, `{ me { name } }`, nil) // authenticates the token (cached afterwards)

	statements := func(perPage int) (int64, []jobFields) {
		t.Helper()
		var first struct {
			Jobs struct{ PageInfo struct{ EndCursor string } }
		}
		i.post(t, viewer, `query($n: Int!) { jobs(first: $n) { pageInfo { endCursor } } }`, map[string]any{"n": perPage}).decode(t, &first)
		counter.n.Store(0)
		var data struct {
			A struct{ Nodes []jobFields }
			B struct{ Edges []struct{ Node jobFields } }
		}
		i.post(t, viewer, jobsFieldsQuery, map[string]any{"n": perPage, "after": first.Jobs.PageInfo.EndCursor, "runs": 3, "failed": []string{"FAILED"}}).decode(t, &data)
		got := counter.n.Load()
		jobs := data.A.Nodes
		for _, e := range data.B.Edges {
			jobs = append(jobs, e.Node)
		}
		return got, jobs
	}
	few, fewJobs := statements(10)
	all, allJobs := statements(n / 2)
	t.Logf("statements: %d for %d jobs, %d for %d", few, len(fewJobs), all, len(allJobs))
	if len(fewJobs) != 20 || len(allJobs) != n {
		t.Fatalf("%d and %d jobs, want 20 and %d", len(fewJobs), len(allJobs), n)
	}
	if all != few {
		t.Fatalf("%d jobs cost %d statements, 20 jobs %d: the cost grows with the page", n, all, few)
	}
	// Per page: jobs, active runs (+ their errors and counts), last runs (+ errors, counts),
	// the jobs' counts, runs (+ errors, counts), failed runs.
	if few > 2*12 {
		t.Fatalf("%d statements for two pages; want at most %d", few, 2*12)
	}
	for k, j := range allJobs {
		if want := fmt.Sprintf("job-%03d", k); j.Name != want {
			t.Fatalf("job %d is %s, want %s", k, j.Name, want)
		}
		running := k%10 == 0
		if (j.ActiveRun != nil) != running || j.LastRun == nil || j.LastRun.Job.Name != j.Name {
			t.Fatalf("job %s: active %+v, last %+v", j.Name, j.ActiveRun, j.LastRun)
		}
		if len(j.LedgerSummary) != 1 || j.LedgerSummary[0].Count != 7 {
			t.Fatalf("job %s: ledger summary %+v", j.Name, j.LedgerSummary)
		}
		if len(j.Runs.Nodes) != 3 || !j.Runs.PageInfo.HasNextPage || len(j.Failed.Nodes) != 1 {
			t.Fatalf("job %s: runs %+v, failed %+v", j.Name, j.Runs, j.Failed)
		}
		for _, r := range j.Runs.Nodes {
			if len(r.Errors.Nodes) != 0 {
				t.Fatalf("job %s: run %s has errors %+v; only the oldest run has", j.Name, r.ID, r.Errors.Nodes)
			}
		}
	}
	// The oldest (FAILED) run's errors, through a job's runs.
	var one struct {
		Jobs struct{ Nodes []jobFields }
	}
	i.post(t, viewer, `{ jobs(first: 1) { nodes { failed: runs(status: [FAILED]) { nodes { id } } runs(first: 4) { nodes { id errors(first: 2) { nodes { itemKey message } } } pageInfo { hasNextPage } } } } }`, nil).decode(t, &one)
	runs := one.Jobs.Nodes[0].Runs.Nodes
	if len(runs) != 4 || len(runs[3].Errors.Nodes) != 2 || runs[3].Errors.Nodes[1].Message != "failed 2" {
		t.Fatalf("runs of the first job: %+v", runs)
	}
}

// A connection's first multiplies the cost of what is asked of each item: a page of 100 jobs
// with 20 runs each is refused, a page of 5 is not.
func TestComplexityCountsPageSizes(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: manyJobs(3), poolSize: -1, noRun: true})
	viewer := b.token(model.RoleViewer)
	const q = `query($n: Int) { jobs(first: $n) { nodes { name runs(first: 20) { nodes { id status } } } } }`
	r := i.post(t, viewer, q, map[string]any{"n": 100})
	if r.code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Fatalf("jobs(first: 100) { runs(first: 20) }: code %q (%+v), want COMPLEXITY_LIMIT_EXCEEDED", r.code(), r.Errors)
	}
	var data struct {
		Jobs struct{ Nodes []struct{ Name string } }
	}
	i.post(t, viewer, q, map[string]any{"n": 5}).decode(t, &data)
	if len(data.Jobs.Nodes) != 3 {
		t.Fatalf("jobs(first: 5): %+v", data.Jobs.Nodes)
	}
}

// A WebSocket connection may run a bounded number of subscriptions: the next subscribe gets a
// coded error, the connection stays up, and once one ends another may start.
func TestSubscriptionsPerConnectionCapped(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: manyJobs(1), poolSize: -1, noRun: true,
		graph: func(c *httpapi.Config) { c.MaxSubscriptionsPerConnection = 2 }})
	viewer := b.token(model.RoleViewer)
	b.insertRuns("job-000", 2)
	// The newer run is running (as far as the API can tell: nothing runs it here).
	if _, err := b.Pool.Exec(context.Background(), `UPDATE job_runs SET status = 'RUNNING', finished_at = NULL,
		lease_until = now() + interval '1 hour' WHERE id = (SELECT max(id) FROM job_runs)`); err != nil {
		t.Fatal(err)
	}
	var runs struct {
		Runs struct{ Nodes []struct{ ID string } }
	}
	i.post(t, viewer, `{ runs(first: 2) { nodes { id } } }`, nil).decode(t, &runs)
	running, finished := runs.Runs.Nodes[0].ID, runs.Runs.Nodes[1].ID

	w, _, err := i.dialWS(t, protoTransportWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.init(map[string]any{"authorization": "Bearer " + viewer}); err != nil {
		t.Fatal(err)
	}
	// Two subscriptions that stay: the running run's progress, each answered by its snapshot.
	for _, id := range []string{"a", "b"} {
		w.subscribe(id, progressSubscription, map[string]any{"id": running})
		if ev := w.next(id, 10*time.Second); ev.done || ev.errors != nil {
			t.Fatalf("subscription %s: %+v", id, ev)
		}
	}
	// A finished run's progress: its snapshot, then the end; or the refusal.
	probe := func(id string) event {
		w.subscribe(id, progressSubscription, map[string]any{"id": finished})
		return w.next(id, 10*time.Second)
	}
	ev := probe("c")
	if code := errorCode(ev.errors); code != graph.CodeTooManySubscriptions {
		t.Fatalf("third subscription: %+v (data %s), want an error coded %s", ev.errors, ev.data, graph.CodeTooManySubscriptions)
	}
	// Stop one: a place frees up (soon: the stop is handled asynchronously), on the same
	// connection.
	w.send(wsMsg{ID: "a", Type: "complete"})
	deadline := time.Now().Add(10 * time.Second)
	for k := 0; ; k++ {
		ev := probe(fmt.Sprintf("p%d", k))
		if ev.errors == nil && ev.data != nil {
			var p progressEvent
			if err := json.Unmarshal(ev.data, &p); err != nil || p.RunProgress.ID != finished {
				t.Fatalf("probe: %s %v", ev.data, err)
			}
			break
		}
		if code := errorCode(ev.errors); code != graph.CodeTooManySubscriptions {
			t.Fatalf("probe: %+v, want data or %s", ev.errors, graph.CodeTooManySubscriptions)
		}
		if time.Now().After(deadline) {
			t.Fatal("no subscription accepted after one of two was stopped")
		}
	}
}

// errorCode returns extensions.code of the first of a WebSocket message's errors.
func errorCode(errs []any) string {
	if len(errs) == 0 {
		return ""
	}
	m, _ := errs[0].(map[string]any)
	ext, _ := m["extensions"].(map[string]any)
	code, _ := ext["code"].(string)
	return code
}
