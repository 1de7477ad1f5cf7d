package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// outcomeJob processes one target per entry of outcomes, each ending as its entry says:
// "" succeeds, otherwise the error that outcome's classifier wraps. With fresh, every run
// offers targets no earlier run did.
type outcomeJob struct {
	name     string
	outcomes []string
	fresh    bool
	runs     atomic.Int64
}

func (j *outcomeJob) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Description: "test job", Version: "1", Retry: runner.RetryPolicy{MaxAttempts: 1},
		StopConditions: []runner.StopCondition{}}
}

func (j *outcomeJob) Run(ctx context.Context, run *runner.Run) error {
	prefix := "t"
	if n := j.runs.Add(1); j.fresh {
		prefix = fmt.Sprintf("r%d-t", n)
	}
	for k, outcome := range j.outcomes {
		item := runner.Item{Target: prefix + strconv.Itoa(k), External: true}
		err := run.Process(ctx, item, func(ctx context.Context, _ *runner.Attempt) error {
			cause := errors.New("the provider said no")
			switch outcome {
			case "transient":
				return runner.Transient(cause)
			case "rejected":
				return runner.Rejected(cause)
			case "conflict":
				return runner.Conflict(cause)
			case "policy":
				return runner.Policy(cause)
			case "ambiguous":
				return runner.Ambiguous(cause)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

type wireAttention struct {
	Status         string
	NeedsAttention bool
	Attention      struct{ Failed, Rejected, Ambiguous int }
	Progress       struct{ Failed, Ambiguous int }
}

const attentionFields = `status needsAttention attention { failed rejected ambiguous } progress { failed ambiguous }`

func (i *instance) attentionOf(t *testing.T, token, runID string) wireAttention {
	t.Helper()
	var data struct{ Run wireAttention }
	i.post(t, token, `query($id: ID!) { run(id: $id) { `+attentionFields+` } }`, map[string]any{"id": runID}).decode(t, &data)
	return data.Run
}

// TestRunAttention: a run that ended SUCCEEDED with failed, rejected and ambiguous items says
// it needs attention and how many of each; a clean run does not; resolving an ambiguous target
// lowers the run's ambiguous attention (progress keeps what the run saw), and the run stops
// needing attention when nothing is left.
func TestRunAttention(t *testing.T) {
	b := setup(t)
	mixed := &outcomeJob{name: "mixed", outcomes: []string{"", "transient", "", "rejected", "conflict", "policy", "ambiguous", "ambiguous", ""}}
	clean := &outcomeJob{name: "clean", outcomes: []string{"", "", ""}}
	doubt := &outcomeJob{name: "doubt", outcomes: []string{"", "ambiguous"}}
	i := b.instance(instanceOpts{jobs: []runner.Job{mixed, clean, doubt}})
	op := b.token(model.RoleOperator)

	runID := i.startJob(t, op, "mixed")
	i.waitRunStatus(t, op, runID, "SUCCEEDED")
	got := i.attentionOf(t, op, runID)
	if !got.NeedsAttention || got.Attention.Failed != 1 || got.Attention.Rejected != 3 || got.Attention.Ambiguous != 2 {
		t.Fatalf("mixed run: %+v; want needsAttention with failed 1, rejected 3, ambiguous 2", got)
	}
	if got.Progress.Failed != got.Attention.Failed+got.Attention.Rejected || got.Progress.Ambiguous != 2 {
		t.Fatalf("mixed run: progress %+v does not add up with attention %+v", got.Progress, got.Attention)
	}

	cleanID := i.startJob(t, op, "clean")
	i.waitRunStatus(t, op, cleanID, "SUCCEEDED")
	if got := i.attentionOf(t, op, cleanID); got.NeedsAttention || got.Attention.Failed+got.Attention.Rejected+got.Attention.Ambiguous != 0 {
		t.Fatalf("clean run: %+v; want no attention", got)
	}

	// The doubt run's one ambiguous target, resolved by an operator, leaves nothing to attend,
	// neither in the run that made it nor in a later run that met it quarantined.
	doubtID := i.startJob(t, op, "doubt")
	i.waitRunStatus(t, op, doubtID, "SUCCEEDED")
	if got := i.attentionOf(t, op, doubtID); !got.NeedsAttention || got.Attention.Ambiguous != 1 {
		t.Fatalf("doubt run before resolving: %+v; want ambiguous 1", got)
	}
	againID := i.startJob(t, op, "doubt")
	i.waitRunStatus(t, op, againID, "SUCCEEDED")
	if got := i.attentionOf(t, op, againID); !got.NeedsAttention || got.Attention.Ambiguous != 1 {
		t.Fatalf("second doubt run, meeting the target quarantined: %+v; want ambiguous 1", got)
	}
	var ledger struct {
		Ledger struct{ Nodes []struct{ ID string } }
	}
	i.post(t, op, `{ ledger(jobName: "doubt", state: [AMBIGUOUS_EFFECT]) { nodes { id } } }`, nil).decode(t, &ledger)
	if len(ledger.Ledger.Nodes) != 1 {
		t.Fatalf("doubt's ambiguous entries: %+v", ledger.Ledger.Nodes)
	}
	var res struct {
		ResolveAmbiguous struct{ UserErrors []userError }
	}
	i.post(t, op, `mutation($id: ID!) { resolveAmbiguous(input: {entryId: $id, resolution: NOT_APPLIED, note: "provider has no record"}) { userErrors { code message } } }`,
		map[string]any{"id": ledger.Ledger.Nodes[0].ID}).decode(t, &res)
	if len(res.ResolveAmbiguous.UserErrors) > 0 {
		t.Fatalf("resolveAmbiguous: %+v", res.ResolveAmbiguous.UserErrors)
	}
	for _, id := range []string{doubtID, againID} {
		if got := i.attentionOf(t, op, id); got.NeedsAttention || got.Attention.Ambiguous != 0 || got.Progress.Ambiguous != 1 {
			t.Fatalf("doubt run %s after resolving: %+v; want no attention, progress.ambiguous still 1", id, got)
		}
	}

	// The mixed run is untouched by the other job's resolution.
	if got := i.attentionOf(t, op, runID); got.Attention.Ambiguous != 2 {
		t.Fatalf("mixed run after another job's resolution: %+v", got)
	}
}

// TestRunAttentionIsNotNPlusOne: a page of runs that all need attention costs a fixed number
// of queries for their attention, not one or two per run.
func TestRunAttentionIsNotNPlusOne(t *testing.T) {
	b := setup(t)
	job := &outcomeJob{name: "mixed", outcomes: []string{"", "rejected", "ambiguous", "transient"}, fresh: true}
	counter := &queryCounter{}
	i := b.instance(instanceOpts{jobs: []runner.Job{job}, tracer: counter})
	op := b.token(model.RoleOperator)
	const n = 6
	for range n {
		i.waitRunStatus(t, op, i.startJob(t, op, "mixed"), "SUCCEEDED")
	}

	counter.n.Store(0)
	var plain struct {
		Runs struct{ Nodes []struct{ Status string } }
	}
	i.post(t, op, `{ runs(first: 20) { nodes { status } } }`, nil).decode(t, &plain)
	base := counter.n.Load()

	counter.n.Store(0)
	var data struct {
		Runs struct{ Nodes []wireAttention }
	}
	i.post(t, op, `{ runs(first: 20) { nodes { `+attentionFields+` } } }`, nil).decode(t, &data)
	extra := counter.n.Load() - base
	if len(data.Runs.Nodes) != n {
		t.Fatalf("%d runs, want %d", len(data.Runs.Nodes), n)
	}
	for _, r := range data.Runs.Nodes {
		if !r.NeedsAttention || r.Attention.Failed != 1 || r.Attention.Rejected != 1 || r.Attention.Ambiguous != 1 {
			t.Fatalf("run %+v; want failed 1, rejected 1, ambiguous 1", r)
		}
	}
	// One query for the runs' ledger counters, one for their unresolved ambiguous targets.
	t.Logf("runs: %d queries; with attention: %d more", base, extra)
	if extra > 2 {
		t.Fatalf("attention of %d runs took %d extra queries; want at most 2", n, extra)
	}
}

type wireErrors struct {
	Run struct {
		Errors struct {
			TotalCount int
			Nodes      []struct{ ItemKey, FailureClass, Message string }
			PageInfo   struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
	}
}

// TestRunErrorsFilter: Run.errors filters by failure class and by a text in the item key or
// message across all of the run's error rows, not only one page, and totalCount counts what
// matches; a search text is taken literally; an oversized one is refused with BAD_USER_INPUT.
func TestRunErrorsFilter(t *testing.T) {
	b := setup(t)
	outcomes := make([]string, 0, 40)
	for k := range 40 {
		switch k % 4 {
		case 0:
			outcomes = append(outcomes, "rejected")
		case 1:
			outcomes = append(outcomes, "transient")
		case 2:
			outcomes = append(outcomes, "conflict")
		default:
			outcomes = append(outcomes, "")
		}
	}
	i := b.instance(instanceOpts{jobs: []runner.Job{&outcomeJob{name: "mixed", outcomes: outcomes}}})
	op := b.token(model.RoleOperator)
	runID := i.startJob(t, op, "mixed")
	i.waitRunStatus(t, op, runID, "SUCCEEDED")

	const q = `query($id: ID!, $first: Int, $after: String, $class: String, $search: String) { run(id: $id) {
		errors(first: $first, after: $after, failureClass: $class, search: $search) {
			totalCount nodes { itemKey failureClass message } pageInfo { hasNextPage endCursor } } } }`
	page := func(vars map[string]any) wireErrors {
		t.Helper()
		vars["id"] = runID
		var w wireErrors
		i.post(t, op, q, vars).decode(t, &w)
		return w
	}

	all := page(map[string]any{"first": 5})
	if all.Run.Errors.TotalCount != 30 || len(all.Run.Errors.Nodes) != 5 || !all.Run.Errors.PageInfo.HasNextPage {
		t.Fatalf("unfiltered: total %d, %d rows, next %v; want 30, 5, true", all.Run.Errors.TotalCount, len(all.Run.Errors.Nodes), all.Run.Errors.PageInfo.HasNextPage)
	}

	// The 10 CONFLICT rows, over two pages of 6: every one of them, none of another class.
	var seen []string
	vars := map[string]any{"first": 6, "class": "CONFLICT"}
	for {
		w := page(vars)
		if w.Run.Errors.TotalCount != 10 {
			t.Fatalf("CONFLICT total %d, want 10", w.Run.Errors.TotalCount)
		}
		for _, n := range w.Run.Errors.Nodes {
			if n.FailureClass != "CONFLICT" {
				t.Fatalf("CONFLICT filter gave %+v", n)
			}
			seen = append(seen, n.ItemKey)
		}
		if !w.Run.Errors.PageInfo.HasNextPage {
			break
		}
		vars["after"] = *w.Run.Errors.PageInfo.EndCursor
	}
	if len(seen) != 10 {
		t.Fatalf("CONFLICT rows over the pages: %v; want 10", seen)
	}

	// Search in the item key (case-insensitive), combined with a class: of t1 and t10..t19,
	// the rejected ones are t12 and t16.
	if w := page(map[string]any{"first": 50, "search": "T1", "class": "VALIDATION_REJECTED"}); w.Run.Errors.TotalCount != 2 || len(w.Run.Errors.Nodes) != 2 {
		t.Fatalf("search T1 among rejected: %+v", w.Run.Errors)
	}
	// Search in the message; LIKE wildcards are literal.
	if w := page(map[string]any{"first": 50, "search": "provider said"}); w.Run.Errors.TotalCount != 30 {
		t.Fatalf("message search: total %d, want 30", w.Run.Errors.TotalCount)
	}
	if w := page(map[string]any{"first": 50, "search": "%"}); w.Run.Errors.TotalCount != 0 || len(w.Run.Errors.Nodes) != 0 {
		t.Fatalf("search %%: %+v; want nothing (taken literally)", w.Run.Errors)
	}
	r := i.post(t, op, q, map[string]any{"id": runID, "search": strings.Repeat("x", 201)})
	if r.code() != graph.CodeBadUserInput {
		t.Fatalf("a 201-character search: code %q (%+v), want BAD_USER_INPUT", r.code(), r.Errors)
	}
}
