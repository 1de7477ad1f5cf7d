package graph_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// A replay of selected targets goes through the preflight (counting only the selected targets
// its scope retries) and, when no approval is needed, runs at once: it calls the selected
// targets again and leaves every other target, and its ledger row, as it was.
func TestReplaySelectedTargets(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	calls := map[string]int{}
	job := runner.NewJob(runner.JobInfo{Name: "notify", Description: "test job", Version: "1", Retry: runner.RetryPolicy{MaxAttempts: 1}},
		func(ctx context.Context, run *runner.Run) error {
			for _, k := range []string{"t1", "t2", "t3", "t4", "t5"} {
				if k == "t5" { // refused before any call, every time
					if err := run.Fail(ctx, runner.Item{Target: k, Checkpoint: k}, runner.Rejected(errors.New("invalid record"))); err != nil {
						return err
					}
					continue
				}
				err := run.Process(ctx, runner.Item{Target: k, Checkpoint: k}, func(ctx context.Context, _ *runner.Attempt) error {
					mu.Lock()
					defer mu.Unlock()
					calls[k]++
					if calls[k] == 1 {
						return runner.Transient(errors.New("503"))
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	i := b.instance(instanceOpts{jobs: []runner.Job{job}})
	op := b.token(model.RoleOperator)
	src := i.startJob(t, op, "notify")
	i.waitRunStatus(t, op, src, "SUCCEEDED")

	const pfQuery = `query($id: ID!, $k: [String!]) { replayPreflight(runId: $id, scope: TRANSIENT, targetKeys: $k) {
		targetsInScope blocked blockingReasons targetKeys checks { name verdict detail } } }`
	type preflight struct {
		ReplayPreflight struct {
			TargetsInScope  int
			Blocked         bool
			BlockingReasons []string
			TargetKeys      []string
		}
	}
	var pf preflight
	i.post(t, op, pfQuery, map[string]any{"id": src, "k": []string{"t2", "t3", "t3"}}).decode(t, &pf)
	if p := pf.ReplayPreflight; p.TargetsInScope != 2 || p.Blocked || len(p.TargetKeys) != 2 {
		t.Fatalf("preflight of t2, t3: %+v, want 2 in scope, not blocked", p)
	}

	var req struct {
		RequestReplay struct {
			ReplayRequest *struct {
				Status     string
				TargetKeys []string
				ReplayRun  *struct{ ID string }
			}
			UserErrors []userError
		}
	}
	i.post(t, op, `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { replayRequest { status targetKeys replayRun { id } } userErrors { code message } } }`,
		map[string]any{"in": map[string]any{"runId": src, "scope": "TRANSIENT", "reason": "resend two", "targetKeys": []string{"t2", "t3"}}}).decode(t, &req)
	rr := req.RequestReplay.ReplayRequest
	if rr == nil || rr.Status != "EXECUTED" || rr.ReplayRun == nil || len(rr.TargetKeys) != 2 {
		t.Fatalf("requestReplay of t2, t3: %+v %+v", rr, req.RequestReplay.UserErrors)
	}
	i.waitRunStatus(t, op, rr.ReplayRun.ID, "SUCCEEDED")
	mu.Lock()
	got := map[string]int{"t1": calls["t1"], "t2": calls["t2"], "t3": calls["t3"], "t4": calls["t4"]}
	mu.Unlock()
	if got["t1"] != 1 || got["t2"] != 2 || got["t3"] != 2 || got["t4"] != 1 {
		t.Fatalf("calls %v, want t2 and t3 called again, t1 and t4 not", got)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'notify' AND state = 'TRANSIENT' AND target_key IN ('t1', 't4')`); n != 2 {
		t.Fatalf("%d of t1, t4 still TRANSIENT, want both: the replay touched a target it was not given", n)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger l JOIN job_runs r ON r.id = l.run_id AND r.trigger <> 'REPLAY'
		WHERE l.job_name = 'notify' AND l.target_key IN ('t1', 't4', 't5')`); n != 3 {
		t.Fatalf("%d of t1, t4, t5 last written by the first run, want 3: the replay rewrote a target it was not given", n)
	}
	if n := b.count(`SELECT count(*) FROM job_run_errors e JOIN job_runs r ON r.id = e.run_id WHERE r.trigger = 'REPLAY'`); n != 0 {
		t.Fatalf("the replay recorded %d errors, want none (t5 was not selected)", n)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'notify' AND state = 'CONFIRMED' AND target_key IN ('t2', 't3')`); n != 2 {
		t.Fatalf("%d of t2, t3 CONFIRMED, want both", n)
	}

	// Now that t2 is confirmed, a replay of it alone has nothing to retry: blocked.
	i.post(t, op, pfQuery, map[string]any{"id": src, "k": []string{"t2"}}).decode(t, &pf)
	if p := pf.ReplayPreflight; p.TargetsInScope != 0 || !p.Blocked {
		t.Fatalf("preflight of confirmed t2: %+v, want blocked with nothing in scope", p)
	}
	// No keys, or an empty key, is refused.
	if resp := i.post(t, op, pfQuery, map[string]any{"id": src, "k": []string{}}); resp.code() != "BAD_USER_INPUT" {
		t.Fatalf("preflight of no targets: code %q", resp.code())
	}
	var bad struct {
		RequestReplay struct{ UserErrors []userError }
	}
	i.post(t, op, `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { userErrors { code field } } }`,
		map[string]any{"in": map[string]any{"runId": src, "scope": "TRANSIENT", "reason": "x", "targetKeys": []string{""}}}).decode(t, &bad)
	if !oneCode(bad.RequestReplay.UserErrors, "INVALID_INPUT") || deref(bad.RequestReplay.UserErrors[0].Field) != "targetKeys" {
		t.Fatalf("an empty target key: %+v", bad.RequestReplay.UserErrors)
	}
}
