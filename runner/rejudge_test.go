package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// risky is a job registered at another risk level.
type risky struct {
	runner.Job
	risk bt.RiskLevel
}

func (r risky) Info() runner.JobInfo {
	info := r.Job.Info()
	info.Risk = r.risk
	return info
}

// wantReopened checks that err and got say the request went back to PENDING_APPROVAL for a
// reason naming want, its decision dropped, and that it started no run.
func wantReopened(t *testing.T, b *bundle, what string, got *bt.ReplayRequest, err error, want string) {
	t.Helper()
	if code(err) != bt.CodeApprovalRequired || got == nil || got.Status != bt.ReplayPendingApproval || got.DecidedBy != nil ||
		got.ReopenReason == nil || !strings.Contains(*got.ReopenReason, want) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: %v %+v (reopen reason %q); want APPROVAL_REQUIRED, PENDING_APPROVAL again, undecided, for a reason naming %q",
			what, err, got, deref(reopenOf(got)), want)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE replay_request_id = $1`, got.ID); n != 0 {
		t.Fatalf("%s: the reopened request started %d run(s)", what, n)
	}
}

func reopenOf(r *bt.ReplayRequest) *string {
	if r == nil {
		return nil
	}
	return r.ReopenReason
}

// A RESTART request that needed no approval, whose start failed, does not run once the job
// has become HIGH-risk: its execute judges it again, and it goes back to PENDING_APPROVAL.
func TestRejudgeRestartOfJobThatBecameHighRisk(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, _ := b.settledOnce("ledger-pay", bt.RiskLow, "acct1", "acct2")
	req := approvedWhilePaused(t, b, r, "ledger-pay")
	if req.DecidedBy != nil || req.Preflight.RiskLevel != bt.RiskLow {
		t.Fatalf("request %+v: want APPROVED without a decider, judged LOW", req)
	}
	high := b.runner(nil, risky{Job: job, risk: bt.RiskHigh})
	if _, err := high.Start(ctx, runner.StartParams{Job: "ledger-pay", Mode: bt.ModeRestart, Actor: "alice"}); code(err) != bt.CodeApprovalRequired {
		t.Fatalf("direct RESTART of the HIGH-risk job: %v, want APPROVAL_REQUIRED", err)
	}
	got, err := high.Replays().Execute(ctx, req.ID, runner.Actor{Name: "alice"})
	wantReopened(t, b, "execute by the requester", got, err, "risk rose from LOW to HIGH")
	if !strings.Contains(*got.ReopenReason, "second person's approval") || !strings.Contains(*got.ReopenReason, "compensation reference") ||
		got.Preflight.RiskLevel != bt.RiskHigh {
		t.Fatalf("reopen reason %q, preflight risk %s: want the approval and the compensation reference named, and the HIGH judgement stored",
			*got.ReopenReason, got.Preflight.RiskLevel)
	}
	if g := b.currentGeneration("ledger-pay"); g != 1 {
		t.Fatalf("generation %d after the execute, want 1: nothing may start", g)
	}
	if n := job.callsOf("acct1"); n != 1 {
		t.Fatalf("acct1 called %d times, want once", n)
	}
	b.wantAudit("alice", "executeReplay", replayTarget(req.ID), string(bt.CodeApprovalRequired))
	// A second person cannot approve it either: a HIGH-risk RESTART needs a compensation
	// reference, and this request has none.
	again, err := high.Replays().Approve(ctx, req.ID, runner.Actor{Name: "bob"}, "ok")
	if code(err) != bt.CodeApprovalRequired || again == nil || again.Status != bt.ReplayPendingApproval || b.currentGeneration("ledger-pay") != 1 {
		t.Fatalf("approval of the reopened request without a compensation reference: %v %+v, want APPROVAL_REQUIRED and nothing started", err, again)
	}
}

// A replay request approved for one version of the job's code is judged again when the code
// changed: back to PENDING_APPROVAL, and a second person's approval on the new code runs it.
func TestRejudgeCodeVersionChange(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, run := b.settledOnce("digest", bt.RiskLow, "ok", "tr1")
	if _, err := r.Jobs().Pause(ctx, "digest", "ops"); err != nil {
		t.Fatal(err)
	}
	req, err := r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient, Reason: "retry", Actor: "alice"})
	if code(err) != bt.CodeJobPaused || req == nil || req.Status != bt.ReplayApproved {
		t.Fatalf("replay request while paused: %v %+v, want JOB_PAUSED and APPROVED", err, req)
	}
	if _, _, err := r.Jobs().Resume(ctx, "digest", "ops"); err != nil {
		t.Fatal(err)
	}
	r2 := b.runner(nil, versioned{Job: job, version: "2"})
	got, err := r2.Replays().Execute(ctx, req.ID, runner.Actor{Name: "alice"})
	wantReopened(t, b, "execute on new code", got, err, `code changed from version "1" to "2"`)
	done, err := r2.Replays().Approve(ctx, req.ID, runner.Actor{Name: "bob"}, "read the diff")
	if err != nil || done.Status != bt.ReplayExecuted || done.ReplayRunID == nil || deref(done.DecidedBy) != "bob" {
		t.Fatalf("approval on the new code: %v %+v, want EXECUTED, decided by bob", err, done)
	}
	if rep := b.finish(r2, *done.ReplayRunID); rep.JobVersion != "2" || job.callsOf("tr1") != 2 {
		t.Fatalf("replay run on version %q, tr1 called %d times; want version 2, tr1 twice", rep.JobVersion, job.callsOf("tr1"))
	}
}

// A replay request judged for one target in scope is judged again when its scope grew: a
// later run of the generation left a second target TRANSIENT.
func TestRejudgeScopeChange(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job, phase := settleJob("crawl", "tr1")
	r := b.runner(nil, job)
	run := b.succeed(r, runner.StartParams{Job: "crawl"})
	if _, err := r.Jobs().Pause(ctx, "crawl", "ops"); err != nil {
		t.Fatal(err)
	}
	req, err := r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient, Reason: "retry", Actor: "alice"})
	if code(err) != bt.CodeJobPaused || req == nil || req.Status != bt.ReplayApproved || req.Preflight.TargetsInScope != 1 {
		t.Fatalf("replay request while paused: %v %+v, want APPROVED with 1 target in scope", err, req)
	}
	if _, _, err := r.Jobs().Resume(ctx, "crawl", "ops"); err != nil {
		t.Fatal(err)
	}
	job.mu.Lock()
	job.targets = append(job.targets, "tr2")
	job.mu.Unlock()
	b.succeed(r, runner.StartParams{Job: "crawl", Mode: bt.ModeResume}) // tr2 fails TRANSIENT too
	phase.Store(2)
	got, err := r.Replays().Execute(ctx, req.ID, runner.Actor{Name: "carol"})
	wantReopened(t, b, "execute after the scope grew", got, err, "scope grew from 1 to 2 target(s)")
	if job.callsOf("tr1") != 1 || job.callsOf("tr2") != 1 {
		t.Fatalf("tr1 called %d, tr2 %d times: want once each", job.callsOf("tr1"), job.callsOf("tr2"))
	}
}

// A replay request recorded without a compensation reference, when none was needed, does not
// run once the job is HIGH-risk, whoever approves it: it must be requested again with one.
func TestRejudgeCompensationReferenceNeeded(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, run := b.settledOnce("refunds", bt.RiskLow, "ok", "tr1")
	if _, err := r.Jobs().Pause(ctx, "refunds", "ops"); err != nil {
		t.Fatal(err)
	}
	req, err := r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient, Reason: "retry", Actor: "alice"})
	if code(err) != bt.CodeJobPaused || req == nil || req.Status != bt.ReplayApproved || req.CompensationRef != nil {
		t.Fatalf("replay request while paused: %v %+v, want APPROVED without a compensation reference", err, req)
	}
	if _, _, err := r.Jobs().Resume(ctx, "refunds", "ops"); err != nil {
		t.Fatal(err)
	}
	high := b.runner(nil, risky{Job: job, risk: bt.RiskHigh})
	got, err := high.Replays().Execute(ctx, req.ID, runner.Actor{Name: "carol"})
	wantReopened(t, b, "execute on the HIGH-risk job", got, err, "needs a compensation reference")
	got, err = high.Replays().Approve(ctx, req.ID, runner.Actor{Name: "bob"}, "fine")
	wantReopened(t, b, "approval without a compensation reference", got, err, "needs a compensation reference")
	if job.callsOf("tr1") != 1 {
		t.Fatalf("tr1 called %d times, want once", job.callsOf("tr1"))
	}
	// Requested again with one, a second person's approval runs it.
	req2, err := high.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient, Reason: "retry", CompensationRef: "REFUND-2", Actor: "alice"})
	if err != nil || req2.Status != bt.ReplayPendingApproval {
		t.Fatalf("request with a compensation reference: %v %+v", err, req2)
	}
	done, err := high.Replays().Approve(ctx, req2.ID, runner.Actor{Name: "bob"}, "fine")
	if err != nil || done.Status != bt.ReplayExecuted || done.ReopenReason != nil {
		t.Fatalf("approval with a compensation reference: %v %+v, want EXECUTED", err, done)
	}
	b.finish(high, *done.ReplayRunID)
}
