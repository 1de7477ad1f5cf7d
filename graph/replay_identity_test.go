package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// The run an approved replay starts is requested by the requester, not by the approver, and
// links back to its request, whose decidedBy names the approver.
func TestReplayRunIsRequestedByTheRequester(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "payout", n: 2, risk: bt.RiskHigh}}})
	requester, approver := b.token(model.RoleOperator), b.token(model.RoleApprover)
	src := i.startJob(t, requester, "payout")
	i.waitRunStatus(t, requester, src, "SUCCEEDED")

	var req struct {
		RequestReplay struct {
			ReplayRequest *struct{ ID string }
			UserErrors    []userError
		}
	}
	i.post(t, requester, `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { replayRequest { id } userErrors { code } } }`,
		map[string]any{"in": map[string]any{"runId": src, "scope": "FULL", "reason": "provider outage", "compensationRef": "RUNBOOK-1"}}).decode(t, &req)
	if req.RequestReplay.ReplayRequest == nil {
		t.Fatalf("requestReplay: %+v", req.RequestReplay.UserErrors)
	}
	var dec struct {
		ApproveReplay struct {
			Run *struct {
				ID, RequestedBy string
				ReplayRequest   *struct {
					ID, RequestedBy string
					DecidedBy       *string
				}
			}
			UserErrors []userError
		}
	}
	i.post(t, approver, `mutation($id: ID!) { approveReplay(input: {requestId: $id, note: "ok"}) {
		run { id requestedBy replayRequest { id requestedBy decidedBy } } userErrors { code } } }`,
		map[string]any{"id": req.RequestReplay.ReplayRequest.ID}).decode(t, &dec)
	run := dec.ApproveReplay.Run
	if run == nil {
		t.Fatalf("approveReplay started no run: %+v", dec.ApproveReplay.UserErrors)
	}
	if want := b.tokenName(requester); run.RequestedBy != want {
		t.Errorf("replay run requestedBy = %q, want the requester %q (the approver is %q)", run.RequestedBy, want, b.tokenName(approver))
	}
	rr := run.ReplayRequest
	if rr == nil || rr.ID != req.RequestReplay.ReplayRequest.ID || rr.DecidedBy == nil || *rr.DecidedBy != b.tokenName(approver) {
		t.Errorf("replay run's replayRequest = %+v, want request %s decided by %s", rr, req.RequestReplay.ReplayRequest.ID, b.tokenName(approver))
	}

	// A run no replay started has no request.
	var plain struct {
		Run struct{ ReplayRequest *struct{ ID string } }
	}
	i.post(t, requester, `query($id: ID!) { run(id: $id) { replayRequest { id } } }`, map[string]any{"id": src}).decode(t, &plain)
	if plain.Run.ReplayRequest != nil {
		t.Errorf("scheduled run's replayRequest = %+v, want null", plain.Run.ReplayRequest)
	}
}

// Right after a replay request executes, the source run's preflight names the job's active
// run as the replay's own (activeRun, with its replayRequest), rather than as some other run
// in the way.
func TestPreflightNamesTheReplaysOwnRun(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	first := true
	job := runner.NewJob(runner.JobInfo{Name: "mail", Description: "test job", Version: "1", Retry: runner.RetryPolicy{MaxAttempts: 1}},
		func(ctx context.Context, run *runner.Run) error {
			fail := first
			first = false
			return run.Process(ctx, runner.Item{Target: "t1", Checkpoint: "1"}, func(ctx context.Context, _ *runner.Attempt) error {
				if fail {
					return runner.Transient(errors.New("503 from provider"))
				}
				select { // the replay's retry holds its run active until the test lets it go
				case <-gate:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		})
	i := b.instance(instanceOpts{jobs: []runner.Job{job}})
	op := b.token(model.RoleOperator)
	src := i.startJob(t, op, "mail")
	i.waitRunStatus(t, op, src, "SUCCEEDED")

	var req struct {
		RequestReplay struct {
			ReplayRequest *struct {
				ID, Status string
				ReplayRun  *struct{ ID string }
			}
			UserErrors []userError
		}
	}
	i.post(t, op, `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { replayRequest { id status replayRun { id } } userErrors { code message } } }`,
		map[string]any{"in": map[string]any{"runId": src, "scope": "TRANSIENT", "reason": "provider back"}}).decode(t, &req)
	rr := req.RequestReplay.ReplayRequest
	if rr == nil || rr.Status != "EXECUTED" || rr.ReplayRun == nil {
		t.Fatalf("requestReplay: %+v %+v", rr, req.RequestReplay.UserErrors)
	}
	defer release(t, gate)
	i.waitRunStatus(t, op, rr.ReplayRun.ID, "RUNNING")

	var pf struct {
		ReplayPreflight struct {
			Blocked         bool
			BlockingReasons []string
			ActiveRun       *struct {
				ID            string
				ReplayRequest *struct{ ID string }
			}
		}
	}
	i.post(t, op, `query($id: ID!) { replayPreflight(runId: $id, scope: TRANSIENT) { blocked blockingReasons activeRun { id replayRequest { id } } } }`,
		map[string]any{"id": src}).decode(t, &pf)
	p := pf.ReplayPreflight
	if p.ActiveRun == nil || p.ActiveRun.ID != rr.ReplayRun.ID || p.ActiveRun.ReplayRequest == nil || p.ActiveRun.ReplayRequest.ID != rr.ID {
		t.Fatalf("preflight activeRun = %+v, want the replay's own run %s of request %s", p.ActiveRun, rr.ReplayRun.ID, rr.ID)
	}
	// A second replay still waits for it, and the reason says whose run it is.
	if !p.Blocked || len(p.BlockingReasons) == 0 || !strings.Contains(strings.Join(p.BlockingReasons, "; "), "replay request") {
		t.Fatalf("preflight blocked=%v reasons=%q, want blocked by the replay's own run, named as such", p.Blocked, p.BlockingReasons)
	}
}
