package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// flakyTargetJob walks targets; target fails (TRANSIENT) on its job's first fails runs and
// succeeds afterwards.
func flakyTargetJob(name, target string, fails int) runner.Job {
	runs := 0
	return runner.NewJob(runner.JobInfo{Name: name, Description: "test job", Version: "1", Retry: runner.RetryPolicy{MaxAttempts: 1}},
		func(ctx context.Context, run *runner.Run) error {
			runs++
			n := runs
			for _, k := range []string{target, "other"} {
				err := run.Process(ctx, runner.Item{Target: k}, func(ctx context.Context, _ *runner.Attempt) error {
					if k == target && n <= fails {
						return runner.Transient(errors.New("503 on run " + string(rune('0'+n))))
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
}

const targetQuery = `query($j: String!, $k: String!, $first: Int, $after: String, $eafter: String) {
	target(jobName: $j, targetKey: $k) {
		jobName targetKey job { name }
		entries(first: $first, after: $after) { nodes { generation state attempt idempotencyKey lastError run { id } } pageInfo { hasNextPage endCursor } }
		errors(first: $first, after: $eafter) { nodes { itemKey failureClass message run { id } } pageInfo { hasNextPage endCursor } }
	} }`

type targetPage struct {
	Target *struct {
		JobName, TargetKey string
		Job                *struct{ Name string }
		Entries            struct {
			Nodes []struct {
				Generation     int
				State          string
				Attempt        int
				IdempotencyKey string
				LastError      *string
				Run            struct{ ID string }
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
		Errors struct {
			Nodes []struct {
				ItemKey, FailureClass, Message string
				Run                            struct{ ID string }
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
	}
}

// A target's history reads its entries across generations and its errors across runs, in
// keyset pages, for a key of any characters, and nothing of other targets or other jobs.
func TestTargetHistoryAcrossGenerations(t *testing.T) {
	b := setup(t)
	const key = "acct/42 ü?#%&=+"
	i := b.instance(instanceOpts{jobs: []runner.Job{flakyTargetJob("pay", key, 2), flakyTargetJob("twin", key, 1)}})
	op := b.token(model.RoleOperator)
	var runs []string
	for n, mode := range []string{"RESUME", "RESTART", "RESTART"} {
		id, ues := i.startMode(t, op, "pay", mode)
		if id == "" {
			t.Fatalf("start %d (%s): %+v", n+1, mode, ues)
		}
		i.waitRunStatus(t, op, id, "SUCCEEDED")
		runs = append(runs, id)
	}
	i.waitRunStatus(t, op, i.startJob(t, op, "twin"), "SUCCEEDED") // same key, another job

	var p1 targetPage
	i.post(t, op, targetQuery, map[string]any{"j": "pay", "k": key, "first": 2}).decode(t, &p1)
	tg := p1.Target
	if tg == nil || tg.TargetKey != key || tg.JobName != "pay" || tg.Job == nil || tg.Job.Name != "pay" {
		t.Fatalf("target = %+v", tg)
	}
	e := tg.Entries
	if len(e.Nodes) != 2 || !e.PageInfo.HasNextPage || e.Nodes[0].Generation != 1 || e.Nodes[1].Generation != 2 ||
		e.Nodes[0].State != "TRANSIENT" || e.Nodes[0].Run.ID != runs[0] || e.Nodes[0].LastError == nil || e.Nodes[0].IdempotencyKey == "" ||
		e.Nodes[0].IdempotencyKey == e.Nodes[1].IdempotencyKey {
		t.Fatalf("first page of entries = %+v, want generations 1 and 2, TRANSIENT, with their own keys, more to come", e)
	}
	if len(tg.Errors.Nodes) != 2 || tg.Errors.PageInfo.HasNextPage || tg.Errors.Nodes[0].Run.ID != runs[0] || tg.Errors.Nodes[1].Run.ID != runs[1] ||
		tg.Errors.Nodes[0].ItemKey != key || tg.Errors.Nodes[0].FailureClass != "TRANSIENT" {
		t.Fatalf("errors = %+v, want the two of job pay's first two runs", tg.Errors)
	}

	var p2 targetPage
	i.post(t, op, targetQuery, map[string]any{"j": "pay", "k": key, "first": 2, "after": *e.PageInfo.EndCursor}).decode(t, &p2)
	e2 := p2.Target.Entries
	if len(e2.Nodes) != 1 || e2.PageInfo.HasNextPage || e2.Nodes[0].Generation != 3 || e2.Nodes[0].State != "CONFIRMED" || e2.Nodes[0].Run.ID != runs[2] {
		t.Fatalf("second page of entries = %+v, want generation 3 CONFIRMED by the third run", e2)
	}

	// A page of one error, then the next.
	var p3 targetPage
	i.post(t, op, targetQuery, map[string]any{"j": "pay", "k": key, "first": 1}).decode(t, &p3)
	var p4 targetPage
	i.post(t, op, targetQuery, map[string]any{"j": "pay", "k": key, "first": 1, "eafter": *p3.Target.Errors.PageInfo.EndCursor}).decode(t, &p4)
	if len(p4.Target.Errors.Nodes) != 1 || p4.Target.Errors.Nodes[0].Run.ID != runs[1] || p4.Target.Errors.PageInfo.HasNextPage {
		t.Fatalf("second page of errors = %+v", p4.Target.Errors)
	}

	// Unknown targets are null; a bad key is BAD_USER_INPUT; a cursor of another list is refused.
	var none targetPage
	i.post(t, op, targetQuery, map[string]any{"j": "pay", "k": "acct/43"}).decode(t, &none)
	if none.Target != nil {
		t.Fatalf("unknown target = %+v, want null", none.Target)
	}
	for _, bad := range []map[string]any{
		{"j": "pay", "k": ""},
		{"j": "pay", "k": string(make([]byte, 201))},
		{"j": "pay", "k": key, "eafter": *e.PageInfo.EndCursor},
	} {
		if resp := i.post(t, op, targetQuery, bad); resp.code() != "BAD_USER_INPUT" {
			t.Errorf("target(%v): code %q, want BAD_USER_INPUT", bad, resp.code())
		}
	}
}
