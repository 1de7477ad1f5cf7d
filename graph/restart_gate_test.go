package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/server/httpapi"
)

// inDoubtOnceJob leaves its one target in doubt on its first run and succeeds afterwards.
func inDoubtOnceJob(name string) runner.Job {
	first := true
	return runner.NewJob(runner.JobInfo{Name: name, Description: "test job", Version: "1", Retry: runner.RetryPolicy{MaxAttempts: 1}},
		func(ctx context.Context, run *runner.Run) error {
			fail := first
			first = false
			return run.Process(ctx, runner.Item{Target: "t1", Checkpoint: "1"}, func(ctx context.Context, _ *runner.Attempt) error {
				if fail {
					return runner.Ambiguous(errors.New("timeout after send"))
				}
				return nil
			})
		})
}

type gateRequest struct {
	ID, Kind, Status, Scope, RequestedBy string
	DecidedBy                            *string
	ReplayRun                            *struct{ ID, Mode string }
	Preflight                            struct {
		Kind             string
		RequiresApproval bool
		Blocked          bool
		BlockingReasons  []string
	}
}

const gateRequestFields = `id kind status scope requestedBy decidedBy replayRun { id mode } preflight { kind requiresApproval blocked blockingReasons }`

func (i *instance) startMode(t *testing.T, token, name, mode string) (runID string, ues []userError) {
	t.Helper()
	var data struct {
		StartJob struct {
			Run        *struct{ ID string }
			UserErrors []userError
		}
	}
	i.post(t, token, `mutation($n: String!, $m: RunMode!) { startJob(input: {name: $n, mode: $m}) { run { id } userErrors { code message field } } }`,
		map[string]any{"n": name, "m": mode}).decode(t, &data)
	if data.StartJob.Run != nil {
		runID = data.StartJob.Run.ID
	}
	return runID, data.StartJob.UserErrors
}

func (i *instance) requestRestart(t *testing.T, token string, in map[string]any) (*gateRequest, *struct{ ID string }, []userError) {
	t.Helper()
	var data struct {
		RequestRestart struct {
			ReplayRequest *gateRequest
			Run           *struct{ ID string }
			UserErrors    []userError
		}
	}
	i.post(t, token, `mutation($in: RequestRestartInput!) { requestRestart(input: $in) { replayRequest { `+gateRequestFields+` }
		run { id } userErrors { code message field } } }`, map[string]any{"in": in}).decode(t, &data)
	return data.RequestRestart.ReplayRequest, data.RequestRestart.Run, data.RequestRestart.UserErrors
}

// decide runs approveReplay, rejectReplay or executeReplay on a request.
func (i *instance) decide(t *testing.T, token, mutation, id string) (*gateRequest, []userError) {
	t.Helper()
	var data map[string]struct {
		ReplayRequest *gateRequest
		UserErrors    []userError
	}
	i.post(t, token, `mutation($id: ID!) { `+mutation+`(input: {requestId: $id}) { replayRequest { `+gateRequestFields+` }
		userErrors { code message field } } }`, map[string]any{"id": id}).decode(t, &data)
	return data[mutation].ReplayRequest, data[mutation].UserErrors
}

func oneCode(ues []userError, code string) bool { return len(ues) == 1 && ues[0].Code == code }

// startJob(mode: RESTART) of a HIGH-risk job is refused with APPROVAL_REQUIRED and a message
// naming requestRestart; of a LOW-risk job with a target in doubt, with REPLAY_BLOCKED; of a
// clean LOW-risk job it starts at once. The HIGH-risk RESTART, requested, waits for another
// token's approval and then runs as a RESTART in a new generation.
func TestStartJobRestartGate(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{
		&gatedJob{name: "payout", n: 2, risk: bt.RiskHigh}, &gatedJob{name: "digest", n: 1}, inDoubtOnceJob("mail"),
	}})
	admin, approver := b.token(model.RoleAdmin), b.token(model.RoleApprover)
	for _, job := range []string{"payout", "digest", "mail"} {
		i.waitRunStatus(t, admin, i.startJob(t, admin, job), "SUCCEEDED")
	}
	runs := func() int { return b.count(`SELECT count(*) FROM job_runs`) }

	if id, ues := i.startMode(t, admin, "payout", "RESTART"); id != "" || !oneCode(ues, "APPROVAL_REQUIRED") || !strings.Contains(ues[0].Message, "requestRestart") {
		t.Fatalf("RESTART of a HIGH-risk job: run %q, %+v; want APPROVAL_REQUIRED naming requestRestart", id, ues)
	}
	if id, ues := i.startMode(t, admin, "mail", "RESTART"); id != "" || !oneCode(ues, "REPLAY_BLOCKED") || !strings.Contains(ues[0].Message, "AMBIGUOUS_EFFECT") {
		t.Fatalf("RESTART with a target in doubt: run %q, %+v; want REPLAY_BLOCKED naming AMBIGUOUS_EFFECT", id, ues)
	}
	if n := runs(); n != 3 {
		t.Fatalf("%d runs after the refusals, want 3", n)
	}
	if n := b.auditRows(b.tokenName(admin), "startJob", "APPROVAL_REQUIRED"); n != 1 {
		t.Fatalf("%d APPROVAL_REQUIRED startJob audit rows, want 1", n)
	}
	if id, ues := i.startMode(t, admin, "digest", "RESTART"); id == "" || len(ues) != 0 {
		t.Fatalf("RESTART of a clean LOW-risk job: run %q, %+v; want it started", id, ues)
	} else {
		i.waitRunStatus(t, admin, id, "SUCCEEDED")
	}
	if id, ues := i.startMode(t, admin, "payout", "RESUME"); id == "" || len(ues) != 0 {
		t.Fatalf("RESUME of a HIGH-risk job: run %q, %+v; want it started", id, ues)
	} else {
		i.waitRunStatus(t, admin, id, "SUCCEEDED")
	}

	var pf struct {
		P, Digest, Never *struct {
			Kind             string
			RequiresApproval bool
			Blocked          bool
		}
	}
	i.post(t, admin, `{ p: restartPreflight(name: "payout") { kind requiresApproval blocked }
		digest: restartPreflight(name: "digest") { kind requiresApproval blocked } }`, nil).decode(t, &pf)
	if pf.P == nil || pf.P.Kind != "RESTART" || !pf.P.RequiresApproval || pf.P.Blocked || pf.Digest == nil || pf.Digest.RequiresApproval || pf.Digest.Blocked {
		t.Fatalf("restartPreflight: payout %+v, digest %+v", pf.P, pf.Digest)
	}

	if req, _, ues := i.requestRestart(t, admin, map[string]any{"name": "payout", "reason": "new business date"}); req != nil || !oneCode(ues, "APPROVAL_REQUIRED") {
		t.Fatalf("requestRestart without compensation: %+v %+v", req, ues)
	}
	if req, _, ues := i.requestRestart(t, admin, map[string]any{"name": "mail", "reason": "resend"}); req == nil || req.Status != "BLOCKED" || !oneCode(ues, "REPLAY_BLOCKED") {
		t.Fatalf("requestRestart with a target in doubt: %+v %+v, want BLOCKED", req, ues)
	}
	req, run, ues := i.requestRestart(t, admin, map[string]any{"name": "payout", "reason": "new business date", "compensationRef": "REFUND-4"})
	if req == nil || len(ues) != 0 || run != nil || req.Kind != "RESTART" || req.Scope != "FULL" || req.Status != "PENDING_APPROVAL" ||
		req.Preflight.Kind != "RESTART" || !req.Preflight.RequiresApproval || req.RequestedBy != b.tokenName(admin) {
		t.Fatalf("requestRestart: %+v, run %+v, %+v", req, run, ues)
	}
	if _, ues := i.decide(t, admin, "approveReplay", req.ID); !oneCode(ues, "SELF_APPROVAL") {
		t.Fatalf("approval by the requester's token: %+v", ues)
	}
	if _, ues := i.decide(t, admin, "rejectReplay", req.ID); !oneCode(ues, "SELF_APPROVAL") {
		t.Fatalf("rejection by the requester's token: %+v", ues)
	}
	got, ues := i.decide(t, approver, "approveReplay", req.ID)
	if len(ues) != 0 || got == nil || got.Status != "EXECUTED" || got.ReplayRun == nil || got.ReplayRun.Mode != "RESTART" || got.DecidedBy == nil || *got.DecidedBy != b.tokenName(approver) {
		t.Fatalf("approval by another token: %+v %+v", got, ues)
	}
	i.waitRunStatus(t, admin, got.ReplayRun.ID, "SUCCEEDED")
	if g := b.count(`SELECT current_generation FROM job_settings WHERE name = 'payout'`); g != 2 {
		t.Fatalf("payout generation %d, want 2 (the approved RESTART opened it)", g)
	}
}

// Four-eyes compares token ids: requests and decisions record them, and a revoked token's name
// cannot be issued again to pass for its holder.
func TestFourEyesOnTokenIdentity(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "payout", n: 2, risk: bt.RiskHigh}}})
	requester, approver := b.token(model.RoleAdmin), b.token(model.RoleApprover)
	i.waitRunStatus(t, requester, i.startJob(t, requester, "payout"), "SUCCEEDED")
	req, _, ues := i.requestRestart(t, requester, map[string]any{"name": "payout", "reason": "again", "compensationRef": "REFUND-5"})
	if req == nil || len(ues) != 0 {
		t.Fatalf("requestRestart: %+v %+v", req, ues)
	}
	store := httpapi.NewTokenStore(b.Pool)
	name := b.tokenName(requester)
	if _, err := store.RevokeToken(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if _, _, err := httpapi.CreateToken(context.Background(), store, name, model.RoleApprover); bt.CodeOf(err) != bt.CodeConflict {
		t.Fatalf("reissuing the requester's name to an approver: %v, want CONFLICT", err)
	}
	got, ues := i.decide(t, approver, "approveReplay", req.ID)
	if len(ues) != 0 || got == nil || got.Status != "EXECUTED" {
		t.Fatalf("approval by another token: %+v %+v", got, ues)
	}
	ids := b.count(`SELECT count(*) FROM replay_requests r
		JOIN api_tokens a ON a.id = r.requested_by_token_id AND a.name = r.requested_by
		JOIN api_tokens d ON d.id = r.decided_by_token_id AND d.name = r.decided_by`)
	if ids != 1 {
		t.Fatalf("%d requests recording the requester's and the approver's token ids, want 1", ids)
	}
}

// An APPROVED request whose run could not start (the job was paused) is executed through
// executeReplay, by an approver, once the job can run.
func TestExecuteReplayMutation(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "payout", n: 2, risk: bt.RiskHigh}}})
	admin, approver, op := b.token(model.RoleAdmin), b.token(model.RoleApprover), b.token(model.RoleOperator)
	id := i.startJob(t, admin, "payout")
	i.waitRunStatus(t, admin, id, "SUCCEEDED")
	var rr struct {
		RequestReplay struct {
			ReplayRequest *gateRequest
			UserErrors    []userError
		}
	}
	i.post(t, admin, `mutation($in: RequestReplayInput!) { requestReplay(input: $in) { replayRequest { `+gateRequestFields+` } userErrors { code } } }`,
		map[string]any{"in": map[string]any{"runId": id, "scope": "FULL", "reason": "provider outage", "compensationRef": "RUNBOOK-12"}}).decode(t, &rr)
	req := rr.RequestReplay.ReplayRequest
	if req == nil || req.Status != "PENDING_APPROVAL" || req.Kind != "REPLAY" {
		t.Fatalf("requestReplay: %+v", rr.RequestReplay)
	}
	i.post(t, admin, `mutation { pauseJob(input: {name: "payout"}) { userErrors { code } } }`, nil)
	got, ues := i.decide(t, approver, "approveReplay", req.ID)
	if !oneCode(ues, "JOB_PAUSED") || got == nil || got.Status != "APPROVED" || !strings.Contains(ues[0].Message, "executeReplay") {
		t.Fatalf("approval while paused: %+v %+v; want JOB_PAUSED naming executeReplay, the request APPROVED", got, ues)
	}
	if _, ues := i.decide(t, approver, "executeReplay", req.ID); !oneCode(ues, "JOB_PAUSED") {
		t.Fatalf("executeReplay while paused: %+v", ues)
	}
	if res := i.post(t, op, `mutation($id: ID!) { executeReplay(input: {requestId: $id}) { userErrors { code } } }`, map[string]any{"id": req.ID}); res.code() != "FORBIDDEN" {
		t.Fatalf("executeReplay by an operator: %s, want FORBIDDEN", res.code())
	}
	if _, ues := i.decide(t, approver, "executeReplay", "not-an-id"); !oneCode(ues, "INVALID_INPUT") {
		t.Fatalf("executeReplay with a malformed id: %+v", ues)
	}
	i.post(t, admin, `mutation { resumeJob(input: {name: "payout"}) { userErrors { code } } }`, nil)
	got, ues = i.decide(t, approver, "executeReplay", req.ID)
	if len(ues) != 0 || got == nil || got.Status != "EXECUTED" || got.ReplayRun == nil {
		t.Fatalf("executeReplay after resume: %+v %+v", got, ues)
	}
	i.waitRunStatus(t, admin, got.ReplayRun.ID, "SUCCEEDED")
	if _, ues := i.decide(t, approver, "executeReplay", req.ID); !oneCode(ues, "CONFLICT") {
		t.Fatalf("executeReplay of an executed request: %+v", ues)
	}
}
