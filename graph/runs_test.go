package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

type listedRun struct {
	ID       string
	Number   int64
	JobName  string
	Trigger  string
	Instance string
}

type runsPage struct {
	Runs struct {
		Nodes    []listedRun
		PageInfo struct {
			HasNextPage bool
			EndCursor   *string
		}
	}
}

const runsQuery = `query($filter: RunsFilter, $first: Int, $after: String) {
	runs(filter: $filter, first: $first, after: $after) {
		nodes { id number jobName trigger instance }
		pageInfo { hasNextPage endCursor }
	}
}`

// TestRunsQueryFilters lists runs across jobs through the API: by job, trigger, instance,
// time range and run number, and pages through them one at a time without duplicates or
// gaps. Each run's number is the one inside its global id, the one the CLI takes.
func TestRunsQueryFilters(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "a", n: 1}, &gatedJob{name: "b", n: 1}}})
	op := b.token(model.RoleOperator)
	before := time.Now().Add(-time.Minute)
	var started []string // newest last
	for _, j := range []string{"a", "b", "a"} {
		id := i.startJob(t, op, j)
		i.waitRunStatus(t, op, id, "SUCCEEDED")
		started = append(started, id)
	}
	list := func(filter map[string]any, first int, after *string) runsPage {
		t.Helper()
		vars := map[string]any{"filter": filter, "first": first}
		if after != nil {
			vars["after"] = *after
		}
		var p runsPage
		i.post(t, op, runsQuery, vars).decode(t, &p)
		return p
	}
	ids := func(p runsPage) []string {
		var out []string
		for _, r := range p.Runs.Nodes {
			out = append(out, r.ID)
		}
		return out
	}
	all := list(nil, 100, nil)
	if got, want := ids(all), []string{started[2], started[1], started[0]}; !slices.Equal(got, want) {
		t.Fatalf("all runs: %v, want %v", got, want)
	}
	for _, r := range all.Runs.Nodes {
		if n, ok := graph.RunNumber(r.ID); !ok || n != r.Number {
			t.Errorf("run %s: number %d, want the id's %d", r.ID, r.Number, n)
		}
	}
	instance := all.Runs.Nodes[0].Instance
	if instance == "" {
		t.Fatal("a run has no instance")
	}
	cases := []struct {
		name   string
		filter map[string]any
		want   []string
	}{
		{"job", map[string]any{"jobName": "a"}, []string{started[2], started[0]}},
		{"trigger", map[string]any{"triggers": []string{"MANUAL"}}, []string{started[2], started[1], started[0]}},
		{"other trigger", map[string]any{"triggers": []string{"SCHEDULED", "REPLAY"}}, nil},
		{"instance", map[string]any{"instance": instance}, []string{started[2], started[1], started[0]}},
		{"other instance", map[string]any{"instance": "elsewhere"}, nil},
		{"range", map[string]any{"startedFrom": before.Format(time.RFC3339Nano), "startedBefore": time.Now().Add(time.Hour).Format(time.RFC3339Nano)},
			[]string{started[2], started[1], started[0]}},
		{"past range", map[string]any{"startedBefore": before.Format(time.RFC3339Nano)}, nil},
		{"number", map[string]any{"number": all.Runs.Nodes[1].Number}, []string{started[1]}},
		{"number and job", map[string]any{"number": all.Runs.Nodes[1].Number, "jobName": "a"}, nil},
		{"combined", map[string]any{"jobName": "a", "statuses": []string{"SUCCEEDED"}, "triggers": []string{"MANUAL"}, "instance": instance},
			[]string{started[2], started[0]}},
	}
	for _, c := range cases {
		if got := ids(list(c.filter, 100, nil)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Pages of one: every run once, in order, and the last page says there is no more.
	var paged []string
	var after *string
	for range 10 {
		p := list(nil, 1, after)
		paged = append(paged, ids(p)...)
		if !p.Runs.PageInfo.HasNextPage {
			break
		}
		after = p.Runs.PageInfo.EndCursor
	}
	if !slices.Equal(paged, ids(all)) {
		t.Fatalf("paged one at a time: %v, want %v", paged, ids(all))
	}
	// The old arguments keep working.
	var old runsPage
	i.post(t, op, `query { runs(jobName: "b") { nodes { id number jobName trigger instance } pageInfo { hasNextPage endCursor } } }`, nil).decode(t, &old)
	if got := ids(old); !slices.Equal(got, []string{started[1]}) {
		t.Fatalf("runs(jobName:): %v", got)
	}
}

// TestRunsQueryRefusesBadFilters answers a contradictory or impossible filter with
// BAD_USER_INPUT, naming what is wrong.
func TestRunsQueryRefusesBadFilters(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{poolSize: -1})
	v := b.token(model.RoleViewer)
	for _, c := range []struct{ name, query, says string }{
		{"job twice", `{ runs(jobName: "a", filter: {jobName: "b"}) { nodes { id } } }`, "not both"},
		{"status twice", `{ runs(status: [FAILED], filter: {statuses: [PAUSED]}) { nodes { id } } }`, "not both"},
		{"number 0", `{ runs(filter: {number: 0}) { nodes { id } } }`, "run number"},
		{"empty range", `{ runs(filter: {startedFrom: "2026-01-02T00:00:00Z", startedBefore: "2026-01-01T00:00:00Z"}) { nodes { id } } }`, "must be before"},
		{"bad time", `{ runs(filter: {startedFrom: "yesterday"}) { nodes { id } } }`, ""},
	} {
		r := i.post(t, v, c.query, nil)
		if len(r.Errors) == 0 {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if c.says != "" && (r.code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, c.says)) {
			t.Errorf("%s: %s %q, want BAD_USER_INPUT saying %q", c.name, r.code(), r.Errors[0].Message, c.says)
		}
	}
}

type cancelRunsPayload struct {
	CancelRuns struct {
		Runs []struct {
			ID              string
			CancelRequested bool
		}
		UserErrors []userError
	}
}

const cancelRunsMutation = `mutation($ids: [ID!]!) { cancelRuns(input: {runIds: $ids}) { runs { id cancelRequested } userErrors { code field message } } }`

// TestCancelRuns cancels two running runs, an ended one, an unknown one and a duplicate in
// one request: the running ones are cancelled and end CANCELLED, the others come back as user
// errors naming their position, and one audit entry lists every run with its outcome.
func TestCancelRuns(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	reached := make(chan int, 8)
	i := b.instance(instanceOpts{jobs: []runner.Job{
		&gatedJob{name: "x", n: 2, gate: gate, reached: reached}, &gatedJob{name: "y", n: 2, gate: gate, reached: reached},
		&gatedJob{name: "done", n: 1},
	}})
	t.Cleanup(func() { close(gate) })
	op := b.token(model.RoleOperator)
	ended := i.startJob(t, op, "done")
	i.waitRunStatus(t, op, ended, "SUCCEEDED")
	x, y := i.startJob(t, op, "x"), i.startJob(t, op, "y")
	<-reached
	<-reached
	unknown := graph.RunID(999999)

	var p cancelRunsPayload
	i.post(t, op, cancelRunsMutation, map[string]any{"ids": []string{x, y, ended, unknown, x}}).decode(t, &p)
	var cancelled []string
	for _, r := range p.CancelRuns.Runs {
		if !r.CancelRequested {
			t.Errorf("run %s: cancel not requested", r.ID)
		}
		cancelled = append(cancelled, r.ID)
	}
	if !slices.Equal(cancelled, []string{x, y}) {
		t.Fatalf("cancelled %v, want %v", cancelled, []string{x, y})
	}
	var errs []string
	for _, e := range p.CancelRuns.UserErrors {
		errs = append(errs, fmt.Sprintf("%s@%s", e.Code, deref(e.Field)))
	}
	if want := []string{"NOT_ACTIVE@runIds[2]", "NOT_FOUND@runIds[3]"}; !slices.Equal(errs, want) {
		t.Fatalf("user errors %v, want %v", errs, want)
	}
	for range 2 {
		release(t, gate)
	}
	i.waitRunStatus(t, op, x, "CANCELLED")
	i.waitRunStatus(t, op, y, "CANCELLED")

	// One audit entry for the request, listing its members; none per run.
	name := b.tokenName(op)
	if n := b.auditRows(name, "cancelRun", "ok"); n != 0 {
		t.Errorf("%d cancelRun entries, want none", n)
	}
	var target, outcome string
	var args []byte
	err := b.Pool.QueryRow(context.Background(), `SELECT target, outcome, arguments FROM audit_log WHERE actor = $1 AND action = 'cancelRuns'`, name).
		Scan(&target, &outcome, &args)
	if err != nil {
		t.Fatalf("the one cancelRuns entry: %v", err)
	}
	var stored struct {
		Runs []struct {
			Run     int64
			Outcome string
		}
	}
	if err := json.Unmarshal(args, &stored); err != nil {
		t.Fatal(err)
	}
	num := func(id string) int64 { n, _ := graph.RunNumber(id); return n }
	var members []string
	for _, m := range stored.Runs {
		members = append(members, fmt.Sprintf("%d:%s", m.Run, m.Outcome))
	}
	want := []string{fmt.Sprintf("%d:ok", num(x)), fmt.Sprintf("%d:ok", num(y)), fmt.Sprintf("%d:NOT_ACTIVE", num(ended)), "999999:NOT_FOUND"}
	if outcome != "PARTIAL" || !slices.Equal(members, want) || !strings.HasPrefix(target, "runs:") {
		t.Fatalf("audit entry: target %q outcome %q members %v, want PARTIAL with %v", target, outcome, members, want)
	}
}

// TestCancelRunsRefusesBadInput cancels nothing when an id is malformed, when none or more
// than 100 runs are named (the API's input limits refuse those whole); each refusal is audited.
func TestCancelRunsRefusesBadInput(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	reached := make(chan int, 4)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "x", n: 1, gate: gate, reached: reached}}})
	t.Cleanup(func() { close(gate) })
	op := b.token(model.RoleOperator)
	x := i.startJob(t, op, "x")
	<-reached
	many := make([]string, 101)
	for k := range many {
		many[k] = graph.RunID(int64(k + 1))
	}
	for _, c := range []struct {
		name  string
		ids   []string
		field string
	}{
		{"malformed", []string{x, "not-an-id"}, "runIds[1]"},
		{"none", []string{}, "runIds"},
	} {
		var p cancelRunsPayload
		i.post(t, op, cancelRunsMutation, map[string]any{"ids": c.ids}).decode(t, &p)
		if len(p.CancelRuns.UserErrors) != 1 || p.CancelRuns.UserErrors[0].Code != "INVALID_INPUT" || deref(p.CancelRuns.UserErrors[0].Field) != c.field {
			t.Errorf("%s: %+v, want one INVALID_INPUT at %s", c.name, p.CancelRuns.UserErrors, c.field)
		}
		if len(p.CancelRuns.Runs) != 0 {
			t.Errorf("%s: cancelled %v", c.name, p.CancelRuns.Runs)
		}
	}
	// More than 100 is refused whole by the API's input limits, before the mutation runs.
	if resp := i.post(t, op, cancelRunsMutation, map[string]any{"ids": many}); resp.code() != graph.CodeInputTooLong || resp.Errors[0].Extensions["field"] != "input.runIds" {
		t.Errorf("101 runs: %+v, want INPUT_TOO_LONG on input.runIds", resp.Errors)
	}
	var data struct {
		Run struct{ CancelRequested bool }
	}
	i.post(t, op, `query($id: ID!) { run(id: $id) { cancelRequested } }`, map[string]any{"id": x}).decode(t, &data)
	if data.Run.CancelRequested {
		t.Fatal("a refused request cancelled a run")
	}
	if n := b.auditRows(b.tokenName(op), "cancelRuns", "INVALID_INPUT"); n != 2 {
		t.Fatalf("%d refusals audited, want 2", n)
	}
	if n := b.auditRows(b.tokenName(op), "cancelRuns", "INPUT_TOO_LONG"); n != 1 {
		t.Fatalf("%d over-long refusals audited, want 1", n)
	}
	release(t, gate)
}

// TestRunEventsTimeline shows a run's recorded events through Run.events: a pause request
// and its lifting by the operator, then a cancel request, between the activation and the end.
func TestRunEventsTimeline(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	reached := make(chan int, 4)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "x", n: 2, gate: gate, reached: reached}}})
	t.Cleanup(func() { close(gate) })
	op := b.token(model.RoleOperator)
	x := i.startJob(t, op, "x")
	<-reached
	for _, m := range []string{
		`mutation { pauseJob(input: {name: "x"}) { userErrors { code } } }`,
		`mutation { resumeJob(input: {name: "x"}) { userErrors { code } } }`,
	} {
		r := i.post(t, op, m, nil)
		if len(r.Errors) > 0 || strings.Contains(string(r.Data), "code") {
			t.Fatalf("%s: %s %+v", m, r.Data, r.Errors)
		}
	}
	var c cancelRunsPayload
	i.post(t, op, cancelRunsMutation, map[string]any{"ids": []string{x}}).decode(t, &c)
	release(t, gate)
	i.waitRunStatus(t, op, x, "CANCELLED")

	var data struct {
		Run struct {
			Events []struct {
				Kind, Detail, Actor string
				Shard               *string
			}
		}
	}
	i.post(t, op, `query($id: ID!) { run(id: $id) { events { kind detail actor shard } } }`, map[string]any{"id": x}).decode(t, &data)
	var kinds []string
	name := b.tokenName(op)
	for _, e := range data.Run.Events {
		if e.Kind == "LEASE_RENEWED" {
			continue // as many as the lease needed
		}
		k := e.Kind
		if e.Actor != "" {
			k += ":" + e.Actor
		}
		kinds = append(kinds, k)
		if e.Shard != nil {
			t.Errorf("%s has shard %q", e.Kind, *e.Shard)
		}
	}
	want := []string{"REQUESTED:" + name, "ACTIVATED", "PAUSE_REQUESTED:" + name, "PAUSE_LIFTED:" + name, "CANCEL_REQUESTED:" + name, "FINISHED"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("timeline %v, want %v", kinds, want)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
