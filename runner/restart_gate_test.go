package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// restartApproved restarts a gated job the way an operator must: a RESTART request by one
// person, approved by another. It returns the RESTART run's id.
func (b *bundle) restartApproved(r *runner.Runner, job string) int64 {
	b.T.Helper()
	ctx := context.Background()
	req, err := r.Replays().RequestRestart(ctx, runner.RestartParams{Job: job, Reason: "test restart", CompensationRef: "TEST-1", Actor: "requester"})
	if err != nil {
		b.T.Fatalf("request a RESTART of %s: %v", job, err)
	}
	if req.Status == bt.ReplayPendingApproval {
		if req, err = r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "approver"}, "test"); err != nil {
			b.T.Fatalf("approve the RESTART of %s: %v", job, err)
		}
	}
	if req.Status != bt.ReplayExecuted || req.ReplayRunID == nil {
		b.T.Fatalf("RESTART request of %s is %s without a run", job, req.Status)
	}
	return *req.ReplayRunID
}

// settledOnce runs job name over targets once to success (risk set, unless ""), then moves it
// to its second phase, in which every target succeeds. It returns the runner, the job and the
// first run.
func (b *bundle) settledOnce(name string, risk bt.RiskLevel, targets ...string) (*runner.Runner, *ledgerJob, *bt.RunRecord) {
	b.T.Helper()
	job, phase := settleJob(name, targets...)
	if risk != "" {
		job.info.Risk = risk
	}
	r := b.runner(nil, job)
	run := b.succeed(r, runner.StartParams{Job: name})
	phase.Store(2)
	return r, job, run
}

// currentGeneration reads the job's current generation.
func (b *bundle) currentGeneration(job string) int {
	return b.count(`SELECT current_generation FROM job_settings WHERE name = $1`, job)
}

// A manual RESTART of a HIGH-risk job would call every target again under new keys: it is
// refused with APPROVAL_REQUIRED, says how to request it, and writes nothing. A RESUME of the
// same job still starts.
func TestRestartOfHighRiskJobNeedsApproval(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, _ := b.settledOnce("payout", bt.RiskHigh, "ok1", "ok2")
	gen := b.currentGeneration("payout")

	_, err := r.Start(ctx, runner.StartParams{Job: "payout", Mode: bt.ModeRestart, Actor: "alice"})
	if code(err) != bt.CodeApprovalRequired || !strings.Contains(err.Error(), "requestRestart") {
		t.Fatalf("RESTART of a HIGH-risk job: %v, want APPROVAL_REQUIRED naming requestRestart", err)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'payout'`); n != 1 || b.currentGeneration("payout") != gen {
		t.Fatalf("after the refusal: %d runs, generation %d; want 1 run, generation %d", n, b.currentGeneration("payout"), gen)
	}
	if job.callsOf("ok1") != 1 {
		t.Fatalf("ok1 called %d times, want once", job.callsOf("ok1"))
	}
	b.wantAudit("alice", "startJob", "job:payout", string(bt.CodeApprovalRequired))

	// RESUME continues the same generation under the same keys: not gated.
	b.succeed(r, runner.StartParams{Job: "payout", Mode: bt.ModeResume, Actor: "alice"})
}

// A target in doubt in the current generation gates the RESTART of a LOW-risk job too: a new
// generation would call it again under a new key.
func TestRestartWithTargetInDoubtIsBlocked(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, _ := b.settledOnce("mail", "", "ok", "amb")
	gen := b.currentGeneration("mail")

	_, err := r.Start(ctx, runner.StartParams{Job: "mail", Mode: bt.ModeRestart, Actor: "alice"})
	if code(err) != bt.CodeReplayBlocked || !strings.Contains(err.Error(), "AMBIGUOUS_EFFECT") {
		t.Fatalf("RESTART with a target in doubt: %v, want REPLAY_BLOCKED naming AMBIGUOUS_EFFECT", err)
	}
	if b.currentGeneration("mail") != gen || job.callsOf("amb") != 1 {
		t.Fatalf("after the refusal: generation %d (want %d), amb called %d times (want 1)", b.currentGeneration("mail"), gen, job.callsOf("amb"))
	}

	// Settled by hand, the job restarts at once.
	e := b.mustEntry("mail", "amb")
	if _, err := r.Ledger().ResolveAmbiguous(ctx, e.ID, runner.ResolveNotApplied, "", "provider has no such mail", "bob"); err != nil {
		t.Fatal(err)
	}
	run := b.succeed(r, runner.StartParams{Job: "mail", Mode: bt.ModeRestart, Actor: "alice"})
	if run.Generation != int64(gen)+1 {
		t.Fatalf("RESTART after settling: generation %d, want %d", run.Generation, gen+1)
	}
}

// A LOW-risk job with nothing in doubt restarts at once, as before.
func TestRestartOfCleanLowRiskJobStartsAtOnce(t *testing.T) {
	b := setup(t)
	job, _ := settleJob("digest", "ok1", "ok2")
	r := b.runner(nil, job)
	first := b.succeed(r, runner.StartParams{Job: "digest"})
	second := b.succeed(r, runner.StartParams{Job: "digest", Mode: bt.ModeRestart, Actor: "alice"})
	if second.Generation != first.Generation+1 || job.callsOf("ok1") != 2 {
		t.Fatalf("RESTART: generation %d after %d, ok1 called %d times; want a new generation calling it again",
			second.Generation, first.Generation, job.callsOf("ok1"))
	}
}

// rejectReplay refuses self-rejection, as approveReplay refuses self-approval.
func TestRejectReplayRefusesTheRequester(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, _, req := pendingRefundReplay(t, b)
	if _, err := r.Replays().Reject(ctx, req.ID, runner.Actor{Name: "alice"}, "never mind"); code(err) != bt.CodeSelfApproval {
		t.Fatalf("self-rejection: %v, want SELF_APPROVAL", err)
	}
	if cur, _ := r.Replays().Get(ctx, req.ID); cur.Status != bt.ReplayPendingApproval {
		t.Fatalf("after a refused self-rejection the request is %s", cur.Status)
	}
	b.wantAudit("alice", "rejectReplay", replayTarget(req.ID), string(bt.CodeSelfApproval))
	if rej, err := r.Replays().Reject(ctx, req.ID, runner.Actor{Name: "bob"}, "not now"); err != nil || rej.Status != bt.ReplayRejected {
		t.Fatalf("rejection by bob: %v %+v", err, rej)
	}
}

// A RESTART of a HIGH-risk job follows the replay lifecycle: requested with its preflight and
// a compensation reference, approved by another identity (compared by token id, not by name),
// then run as a RESTART in a new generation. A second request made for the same generation
// is blocked once the first has moved the job on.
func TestRestartRequestLifecycle(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, first := b.settledOnce("payout", bt.RiskHigh, "ok1", "ok2")
	alice := runner.Actor{Name: "alice", TokenID: 7}

	if _, err := r.Replays().RequestRestart(ctx, runner.RestartParams{Job: "payout", Reason: "new business date", Actor: alice.Name, ActorTokenID: alice.TokenID}); code(err) != bt.CodeApprovalRequired {
		t.Fatalf("HIGH-risk RESTART request without compensation: %v, want APPROVAL_REQUIRED", err)
	}
	if _, err := r.Replays().RequestRestart(ctx, runner.RestartParams{Job: "nope", Reason: "x", Actor: "alice"}); code(err) != bt.CodeNotFound {
		t.Fatalf("RESTART request of an unknown job: %v, want NOT_FOUND", err)
	}
	if n := b.count(`SELECT count(*) FROM replay_requests`); n != 0 {
		t.Fatalf("%d requests recorded by refusals", n)
	}
	req, err := r.Replays().RequestRestart(ctx, runner.RestartParams{Job: "payout", Reason: "new business date", CompensationRef: "REFUND-3",
		Actor: alice.Name, ActorTokenID: alice.TokenID})
	if err != nil || req.Status != bt.ReplayPendingApproval || req.Kind != bt.KindRestart || req.Scope != bt.ScopeFull ||
		req.SourceRunID != first.ID || req.Generation != first.Generation || req.RequestedByTokenID == nil || *req.RequestedByTokenID != 7 ||
		req.Preflight.Kind != bt.KindRestart || !req.Preflight.RequiresApproval || req.Preflight.Confirmed != 2 {
		t.Fatalf("RESTART request: %v %+v; want a PENDING_APPROVAL RESTART of run %d by token 7 with 2 confirmed", err, req, first.ID)
	}
	b.wantAudit("alice", "requestRestart", replayTarget(req.ID), string(bt.ReplayPendingApproval))
	again, err := r.Replays().RequestRestart(ctx, runner.RestartParams{Job: "payout", Reason: "same, twice", CompensationRef: "REFUND-3", Actor: "carol"})
	if err != nil || again.Status != bt.ReplayPendingApproval {
		t.Fatalf("second RESTART request: %v %+v", err, again)
	}

	// The same token under another name is still alice; code naming itself alice is too.
	if _, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "alice-laptop", TokenID: 7}, "ok"); code(err) != bt.CodeSelfApproval {
		t.Fatalf("approval by the requester's token under another name: %v, want SELF_APPROVAL", err)
	}
	if _, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "alice"}, "ok"); code(err) != bt.CodeSelfApproval {
		t.Fatalf("approval by code named as the requester: %v, want SELF_APPROVAL", err)
	}
	if _, err := r.Replays().Reject(ctx, req.ID, runner.Actor{Name: "alice-laptop", TokenID: 7}, "no"); code(err) != bt.CodeSelfApproval {
		t.Fatalf("rejection by the requester's token: %v, want SELF_APPROVAL", err)
	}
	if b.currentGeneration("payout") != int(first.Generation) {
		t.Fatalf("the job moved on before approval")
	}

	done, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "bob", TokenID: 8}, "business date confirmed")
	if err != nil || done.Status != bt.ReplayExecuted || done.ReplayRunID == nil || done.DecidedByTokenID == nil || *done.DecidedByTokenID != 8 {
		t.Fatalf("approval by bob: %v %+v; want EXECUTED with a run, decided by token 8", err, done)
	}
	run := b.finish(r, *done.ReplayRunID)
	if run.Status != bt.StatusSucceeded || run.Mode != bt.ModeRestart || run.Trigger != bt.TriggerManual || run.Generation != first.Generation+1 ||
		run.ReplayRequestID == nil || *run.ReplayRequestID != req.ID || run.RequestedBy != req.RequestedBy {
		t.Fatalf("RESTART run %+v; want a SUCCEEDED manual RESTART in generation %d for request %d, requested by its requester", run, first.Generation+1, req.ID)
	}
	if job.callsOf("ok1") != 2 {
		t.Fatalf("ok1 called %d times, want twice (once per generation)", job.callsOf("ok1"))
	}
	b.wantAudit("bob", "executeReplay", replayTarget(req.ID), string(bt.ReplayExecuted))

	// The second request was made for the generation the first one closed.
	stale, err := r.Replays().Approve(ctx, again.ID, runner.Actor{Name: "dave"}, "ok")
	if code(err) != bt.CodeReplayBlocked || stale == nil || stale.Status != bt.ReplayBlocked || !strings.Contains(err.Error(), "request the RESTART again") {
		t.Fatalf("approving a RESTART request of a past generation: %v %+v, want BLOCKED", err, stale)
	}
	if b.currentGeneration("payout") != int(first.Generation)+1 {
		t.Fatalf("generation %d, want %d: the stale request ran", b.currentGeneration("payout"), first.Generation+1)
	}
}

// A RESTART request while a target is in doubt is recorded BLOCKED; a LOW-risk clean job's
// request runs at once.
func TestRestartRequestBlockedByDoubt(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, _ := b.settledOnce("mail", "", "ok", "amb")
	req, err := r.Replays().RequestRestart(ctx, runner.RestartParams{Job: "mail", Reason: "resend", Actor: "alice"})
	if code(err) != bt.CodeReplayBlocked || req == nil || req.Status != bt.ReplayBlocked || !hasCheck(&req.Preflight, "ambiguous effects", bt.VerdictBlock) {
		t.Fatalf("RESTART request with a target in doubt: %v %+v, want BLOCKED", err, req)
	}
	if job.callsOf("amb") != 1 {
		t.Fatalf("amb called %d times", job.callsOf("amb"))
	}
	e := b.mustEntry("mail", "amb")
	if _, err := r.Ledger().ResolveAmbiguous(ctx, e.ID, runner.ResolveConfirmed, "MSG-1", "provider log shows it sent", "bob"); err != nil {
		t.Fatal(err)
	}
	req, err = r.Replays().RequestRestart(ctx, runner.RestartParams{Job: "mail", Reason: "resend", Actor: "alice"})
	if err != nil || req.Status != bt.ReplayExecuted || req.ReplayRunID == nil {
		t.Fatalf("RESTART request of a settled LOW-risk job: %v %+v, want EXECUTED at once", err, req)
	}
	if run := b.finish(r, *req.ReplayRunID); run.Mode != bt.ModeRestart || run.Status != bt.StatusSucceeded {
		t.Fatalf("run %+v", run)
	}
}

// An APPROVED request whose run could not start (the job paused) stays APPROVED and is
// executed later, by any approver, once the job can run.
func TestExecuteApprovedRequestWhoseStartFailed(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	r, job, req := pendingRefundReplay(t, b)
	if _, err := r.Jobs().Pause(ctx, "refund", "ops"); err != nil {
		t.Fatal(err)
	}
	got, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "bob"}, "ok")
	if code(err) != bt.CodeJobPaused || got == nil || got.Status != bt.ReplayApproved {
		t.Fatalf("approval of a paused job's replay: %v %+v, want JOB_PAUSED and the request APPROVED", err, got)
	}
	if _, err := r.Replays().Execute(ctx, req.ID, runner.Actor{Name: "carol", TokenID: 9}); code(err) != bt.CodeJobPaused {
		t.Fatalf("execute while paused: %v, want JOB_PAUSED", err)
	}
	if cur, _ := r.Replays().Get(ctx, req.ID); cur.Status != bt.ReplayApproved {
		t.Fatalf("after a failed execute the request is %s", cur.Status)
	}
	if _, _, err := r.Jobs().Resume(ctx, "refund", "ops"); err != nil {
		t.Fatal(err)
	}
	done, err := r.Replays().Execute(ctx, req.ID, runner.Actor{Name: "carol", TokenID: 9})
	if err != nil || done.Status != bt.ReplayExecuted || done.ReplayRunID == nil {
		t.Fatalf("execute after resume: %v %+v, want EXECUTED", err, done)
	}
	if rep := b.finish(r, *done.ReplayRunID); rep.Trigger != bt.TriggerReplay || rep.Status != bt.StatusSucceeded || job.callsOf("tr1") != 2 {
		t.Fatalf("replay run %+v, tr1 called %d times", rep, job.callsOf("tr1"))
	}
	if _, err := r.Replays().Execute(ctx, req.ID, runner.Actor{Name: "carol"}); code(err) != bt.CodeConflict {
		t.Fatalf("executing an executed request: %v, want CONFLICT", err)
	}
}

// An IN_FLIGHT intent left by a dead worker gates the RESTART of a LOW-risk job: the call was
// made and its outcome never recorded. A RESUME (not gated) turns it AMBIGUOUS_EFFECT without a
// call, which still blocks the RESTART until it is settled.
func TestRestartWithInFlightIntentIsBlocked(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job := newLedgerJob("notify", "n1", "n2")
	r := b.runner(nil, job)
	first := b.succeed(r, runner.StartParams{Job: "notify"})
	// Plant a dead worker's intent for n3, counters included, as the intent write would.
	key := runner.IdempotencyKey("notify", first.Generation, "n3", "")
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, external, run_id)
		VALUES ('notify', $1, 'n3', '', 'IN_FLIGHT', 1, $2, true, $3)`, first.Generation, key, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n) VALUES ('notify', $1, 0, 'IN_FLIGHT', 1)
		ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + 1`, first.Generation); err != nil {
		t.Fatal(err)
	}
	_, err := r.Start(ctx, runner.StartParams{Job: "notify", Mode: bt.ModeRestart, Actor: "alice"})
	if code(err) != bt.CodeReplayBlocked || !strings.Contains(err.Error(), "1 IN_FLIGHT") {
		t.Fatalf("RESTART with an IN_FLIGHT intent: %v, want REPLAY_BLOCKED naming it", err)
	}
	job.setTargets("n1", "n2", "n3")
	b.succeed(r, runner.StartParams{Job: "notify", Mode: bt.ModeResume, Actor: "alice"})
	if job.callsOf("n3") != 0 {
		t.Fatalf("n3 called %d times with an intent on record", job.callsOf("n3"))
	}
	if _, err := r.Start(ctx, runner.StartParams{Job: "notify", Mode: bt.ModeRestart, Actor: "alice"}); code(err) != bt.CodeReplayBlocked {
		t.Fatalf("RESTART once the intent is AMBIGUOUS_EFFECT: %v, want REPLAY_BLOCKED", err)
	}
	if job.callsOf("n1") != 1 || job.callsOf("n3") != 0 {
		t.Fatalf("calls n1=%d n3=%d: a refused RESTART called targets", job.callsOf("n1"), job.callsOf("n3"))
	}
}

// pendingRefundReplay runs a HIGH-risk job once (one target succeeds, one fails transiently)
// and has alice request a TRANSIENT replay of it, which waits for an approver.
func pendingRefundReplay(t *testing.T, b *bundle) (*runner.Runner, *ledgerJob, *bt.ReplayRequest) {
	t.Helper()
	r, job, run := b.settledOnce("refund", bt.RiskHigh, "ok", "tr1")
	req, err := r.Replays().Request(context.Background(), runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient,
		Reason: "retry", CompensationRef: "REFUND-1", Actor: "alice"})
	if err != nil || req.Status != bt.ReplayPendingApproval {
		t.Fatalf("request: %v %+v", err, req)
	}
	return r, job, req
}
