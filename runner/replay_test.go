package runner_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// settleJob fails its targets by name on the first run (phase 1) and succeeds afterwards:
// ok* confirm, tr* are TRANSIENT, rej/conf/pol are rejected classes, amb is in doubt, bug panics.
func settleJob(name string, targets ...string) (*ledgerJob, *atomic.Int32) {
	job := newLedgerJob(name, targets...)
	phase := &atomic.Int32{}
	phase.Store(1)
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if phase.Load() > 1 {
			return nil
		}
		switch {
		case strings.HasPrefix(target, "tr"):
			return runner.Transient(errors.New("HTTP 503"))
		case target == "rej":
			return runner.Rejected(errors.New("HTTP 422"))
		case target == "conf":
			return runner.Conflict(errors.New("HTTP 409"))
		case target == "pol":
			return runner.Policy(errors.New("limit"))
		case target == "amb":
			return runner.Ambiguous(errors.New("timeout after send"))
		case target == "bug":
			panic("index out of range")
		}
		return nil
	}
	return job, phase
}

func TestPreflightNumbers(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job, _ := settleJob("settle", "ok1", "ok2", "ok3", "rej", "conf", "pol", "tr1", "tr2", "amb", "bug")
	job.info.StopConditions = []runner.StopCondition{{Name: "downstream errors", Metric: runner.DownstreamErrorRate, Threshold: 0.5, MinCalls: 5}}
	r1 := b.runner(nil, job)
	run := b.succeed(r1, runner.StartParams{Job: "settle"})
	// The generation's checkpoint last moved ten minutes ago, by the database clock.
	if _, err := b.Pool.Exec(ctx, `UPDATE job_checkpoints SET updated_at = now() - interval '10 minutes' WHERE job_name = 'settle'`); err != nil {
		t.Fatal(err)
	}

	pf, err := r1.Replays().Preflight(ctx, run.ID, bt.ScopeFailed)
	if err != nil {
		t.Fatal(err)
	}
	wantFailed := map[bt.LedgerState]int64{bt.LedgerTransient: 2, bt.LedgerValidationRejected: 1, bt.LedgerConflict: 1,
		bt.LedgerPolicyBlocked: 1, bt.LedgerBugSuspected: 1}
	if pf.Confirmed != 3 || pf.Ambiguous != 1 || pf.InFlight != 0 || pf.FixQueue != 1 || pf.TargetsInScope != 5 || !sameCounts(pf.FailedByClass, wantFailed) {
		t.Fatalf("preflight confirmed %d ambiguous %d in-flight %d fix queue %d in scope %d failed %v; want 3 1 0 1 5 %v",
			pf.Confirmed, pf.Ambiguous, pf.InFlight, pf.FixQueue, pf.TargetsInScope, pf.FailedByClass, wantFailed)
	}
	if pf.LastCheckpointAgeSecs == nil || *pf.LastCheckpointAgeSecs < 600 || *pf.LastCheckpointAgeSecs > 660 {
		t.Fatalf("last checkpoint age %v, want about 600s", pf.LastCheckpointAgeSecs)
	}
	// 10 external calls: 2 TRANSIENT and 1 in doubt failed downstream; rejections, the panic and successes did not.
	if pf.DownstreamCalls != 10 || math.Abs(pf.DownstreamErrorRate-0.3) > 1e-9 {
		t.Fatalf("downstream %d calls, rate %v; want 10 and 0.3", pf.DownstreamCalls, pf.DownstreamErrorRate)
	}
	if pf.JobVersionChanged || pf.RunJobVersion != "1" || pf.CurrentJobVersion != "1" || pf.RequiresApproval || pf.Blocked || pf.RiskLevel != bt.RiskLow {
		t.Fatalf("preflight %+v: want version 1 unchanged, LOW risk, no approval, not blocked", pf)
	}
	for _, c := range []struct {
		name string
		v    bt.Verdict
	}{{"ambiguous effects", bt.VerdictWarn}, {"fix queue", bt.VerdictWarn}, {"downstream errors", bt.VerdictOK},
		{"targets in scope", bt.VerdictOK}, {"last checkpoint age", bt.VerdictOK}} {
		if !hasCheck(pf, c.name, c.v) {
			t.Errorf("no check %q with verdict %s in %+v", c.name, c.v, pf.Checks)
		}
	}
	for _, c := range pf.Checks {
		if c.Name == "downstream errors" && (math.Abs(c.Value-0.3) > 1e-9 || c.Threshold != 0.5) {
			t.Errorf("stop condition check %+v, want value 0.3 threshold 0.5", c)
		}
	}

	pf, err = r1.Replays().Preflight(ctx, run.ID, bt.ScopeTransient)
	if err != nil || pf.TargetsInScope != 2 || pf.Blocked {
		t.Fatalf("TRANSIENT preflight: %v, in scope %d blocked %v; want 2, not blocked", err, pf.TargetsInScope, pf.Blocked)
	}
	pf, err = r1.Replays().Preflight(ctx, run.ID, bt.ScopeFull)
	if err != nil || !pf.Blocked || !hasCheck(pf, "ambiguous effects", bt.VerdictBlock) {
		t.Fatalf("FULL preflight with a target in doubt: %v blocked %v checks %+v; want blocked by the ambiguous effect", err, pf.Blocked, pf.Checks)
	}
	if _, err := r1.Replays().Preflight(ctx, run.ID, "EVERYTHING"); code(err) != bt.CodeInvalidInput {
		t.Fatalf("unknown scope: %v, want INVALID_INPUT", err)
	}
	if _, err := r1.Replays().Preflight(ctx, 999999, bt.ScopeFailed); code(err) != bt.CodeNotFound {
		t.Fatalf("unknown run: %v, want NOT_FOUND", err)
	}

	// Another instance runs newer code with a stricter stop condition: the version change
	// needs approval, and the downstream rate now blocks.
	r2 := b.runner(nil, versioned{Job: job, version: "2",
		stop: []runner.StopCondition{{Name: "downstream errors", Metric: runner.DownstreamErrorRate, Threshold: 0.2, MinCalls: 5}}})
	pf, err = r2.Replays().Preflight(ctx, run.ID, bt.ScopeFailed)
	if err != nil {
		t.Fatal(err)
	}
	if !pf.JobVersionChanged || pf.CurrentJobVersion != "2" || !pf.RequiresApproval || !pf.Blocked || !hasCheck(pf, "downstream errors", bt.VerdictBlock) {
		t.Fatalf("preflight on newer code: %+v; want version changed 1→2, approval required, blocked by the downstream rate", pf)
	}
	if pf.Confirmed != 3 || pf.Ambiguous != 1 {
		t.Fatalf("the counts do not depend on the instance: %+v", pf)
	}
}

func TestReplayApprovalRules(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job, phase := settleJob("payout", "ok", "tr1", "tr2", "rej", "amb")
	job.info.Risk = bt.RiskHigh
	r := b.runner(nil, job)
	run := b.succeed(r, runner.StartParams{Job: "payout"})
	phase.Store(2)
	requests := func() int { return b.count(`SELECT count(*) FROM replay_requests`) }

	// HIGH risk without a compensation reference: refused, nothing recorded but the audit row.
	_, err := r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient, Reason: "provider was down", Actor: "alice"})
	if code(err) != bt.CodeApprovalRequired || requests() != 0 {
		t.Fatalf("HIGH risk without compensation: %v with %d requests, want APPROVAL_REQUIRED and none", err, requests())
	}
	b.wantAudit("alice", "requestReplay", runTarget(run.ID), string(bt.CodeApprovalRequired))
	if _, err := r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient, CompensationRef: "x", Actor: "alice"}); code(err) != bt.CodeInvalidInput || requests() != 0 {
		t.Fatalf("replay without a reason: %v, want INVALID_INPUT", err)
	}

	// With one: waits for a second person. The ambiguous target does not block a TRANSIENT scope.
	req, err := r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient, Reason: "provider was down",
		CompensationRef: "REFUND-7", Actor: "alice"})
	if err != nil || req.Status != bt.ReplayPendingApproval || !req.Preflight.RequiresApproval || req.Preflight.Ambiguous != 1 || req.RequestedBy != "alice" {
		t.Fatalf("HIGH risk with compensation: %v %+v, want PENDING_APPROVAL requested by alice", err, req)
	}
	b.wantAudit("alice", "requestReplay", replayTarget(req.ID), string(bt.ReplayPendingApproval))

	if _, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "alice"}, "lgtm"); code(err) != bt.CodeSelfApproval {
		t.Fatalf("self-approval: %v, want SELF_APPROVAL", err)
	}
	if cur, _ := r.Replays().Get(ctx, req.ID); cur.Status != bt.ReplayPendingApproval {
		t.Fatalf("after a refused self-approval the request is %s", cur.Status)
	}
	b.wantAudit("alice", "approveReplay", replayTarget(req.ID), string(bt.CodeSelfApproval))
	if n := b.count(`SELECT count(*) FROM job_runs WHERE trigger = 'REPLAY'`); n != 0 {
		t.Fatalf("%d replay runs before approval", n)
	}

	done, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "bob"}, "checked the refund ticket")
	if err != nil || done.Status != bt.ReplayExecuted || done.ReplayRunID == nil || deref(done.DecidedBy) != "bob" {
		t.Fatalf("approval by bob: %v %+v, want EXECUTED with a run, decided by bob", err, done)
	}
	rep := b.finish(r, *done.ReplayRunID)
	if rep.Status != bt.StatusSucceeded || rep.Trigger != bt.TriggerReplay || rep.RequestedBy != "alice" {
		t.Fatalf("replay run %s %s by %s, want a SUCCEEDED REPLAY requested by alice (bob approved it)", rep.Status, rep.Trigger, rep.RequestedBy)
	}
	b.wantAudit("bob", "approveReplay", replayTarget(req.ID), string(bt.ReplayApproved))
	b.wantAudit("bob", "executeReplay", replayTarget(req.ID), string(bt.ReplayExecuted))
	for target, want := range map[string]int{"ok": 1, "tr1": 2, "tr2": 2, "rej": 1, "amb": 1} {
		if n := job.callsOf(target); n != want {
			t.Errorf("%s called %d times, want %d", target, n, want)
		}
	}
	b.wantStates("payout", map[string]bt.LedgerState{"tr1": bt.LedgerConfirmed, "tr2": bt.LedgerConfirmed,
		"rej": bt.LedgerValidationRejected, "amb": bt.LedgerAmbiguous})
	if _, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "carol"}, ""); code(err) != bt.CodeConflict {
		t.Fatalf("approving an executed request: %v, want CONFLICT", err)
	}

	// A rejected request never runs.
	req, err = r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeFailed, Reason: "fix iban", CompensationRef: "REFUND-8", Actor: "alice"})
	if err != nil || req.Status != bt.ReplayPendingApproval {
		t.Fatalf("FAILED scope request: %v %+v", err, req)
	}
	rej, err := r.Replays().Reject(ctx, req.ID, runner.Actor{Name: "bob"}, "iban not fixed yet")
	if err != nil || rej.Status != bt.ReplayRejected || deref(rej.DecidedBy) != "bob" {
		t.Fatalf("reject: %v %+v", err, rej)
	}
	b.wantAudit("bob", "rejectReplay", replayTarget(req.ID), string(bt.ReplayRejected))
	if _, err := r.Replays().Approve(ctx, req.ID, runner.Actor{Name: "carol"}, ""); code(err) != bt.CodeConflict {
		t.Fatalf("approving a rejected request: %v, want CONFLICT", err)
	}
	if job.callsOf("rej") != 1 {
		t.Fatalf("a rejected replay ran")
	}

	// A target in doubt blocks a FULL replay: recorded BLOCKED, REPLAY_BLOCKED returned.
	req, err = r.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeFull, Reason: "everything", CompensationRef: "REFUND-9", Actor: "alice"})
	if code(err) != bt.CodeReplayBlocked || req == nil || req.Status != bt.ReplayBlocked || !req.Preflight.Blocked {
		t.Fatalf("FULL with an ambiguous target: %v %+v, want BLOCKED and REPLAY_BLOCKED", err, req)
	}
	b.wantAudit("alice", "requestReplay", replayTarget(req.ID), string(bt.ReplayBlocked))
	if n := b.count(`SELECT count(*) FROM job_runs WHERE trigger = 'REPLAY'`); n != 1 {
		t.Fatalf("%d replay runs, want the one approved", n)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE actor = '' OR actor IS NULL`); n != 0 {
		t.Fatalf("%d audit rows without an actor", n)
	}
}

// A replay across code versions needs approval even for a LOW-risk job.
func TestReplayAcrossVersionsNeedsApproval(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job, phase := settleJob("digest", "ok", "tr1")
	r1 := b.runner(nil, job)
	run := b.succeed(r1, runner.StartParams{Job: "digest"})
	phase.Store(2)
	r2 := b.runner(nil, versioned{Job: job, version: "2"})

	req, err := r2.Replays().Request(ctx, runner.ReplayParams{RunID: run.ID, Scope: bt.ScopeTransient, Reason: "retry", Actor: "carol"})
	if err != nil || req.Status != bt.ReplayPendingApproval || !req.Preflight.JobVersionChanged || len(req.Preflight.ApprovalReasons) != 1 {
		t.Fatalf("LOW risk across versions: %v %+v, want PENDING_APPROVAL for the version change", err, req)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE trigger = 'REPLAY'`); n != 0 {
		t.Fatalf("a replay needing approval started a run")
	}
	done, err := r2.Replays().Approve(ctx, req.ID, runner.Actor{Name: "dave"}, "reviewed the diff")
	if err != nil || done.Status != bt.ReplayExecuted {
		t.Fatalf("approve: %v %+v", err, done)
	}
	rep := b.finish(r2, *done.ReplayRunID)
	if rep.Status != bt.StatusSucceeded || rep.JobVersion != "2" || job.callsOf("tr1") != 2 || job.callsOf("ok") != 1 {
		t.Fatalf("replay run %s version %q, calls tr1=%d ok=%d; want SUCCEEDED on version 2 retrying tr1 only",
			rep.Status, rep.JobVersion, job.callsOf("tr1"), job.callsOf("ok"))
	}
	b.wantAudit("carol", "requestReplay", replayTarget(req.ID), string(bt.ReplayPendingApproval))
	b.wantAudit("dave", "approveReplay", replayTarget(req.ID), string(bt.ReplayApproved))
	b.wantAudit("dave", "executeReplay", replayTarget(req.ID), string(bt.ReplayExecuted))
}

func TestReconcileAndResolveAmbiguous(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	base := newLedgerJob("transfer", "x1", "x2", "x3", "x4")
	base.noCheckpoint = true
	var phase atomic.Int32
	phase.Store(1)
	base.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if phase.Load() == 1 && target != "x4" {
			return runner.Ambiguous(errors.New("timeout after send"))
		}
		a.SetEvidenceRef("rcpt-" + target)
		return nil
	}
	var mu sync.Mutex
	asked := map[string]string{} // target → key the hook was asked about
	job := &reconcilingJob{ledgerJob: base, reconcile: func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		mu.Lock()
		asked[target] = key
		mu.Unlock()
		switch target {
		case "x1":
			return runner.Reconciliation{Applied: true, EffectRef: "tx-991", EvidenceRef: "provider-tx-991"}, nil
		case "x2":
			return runner.Reconciliation{EffectRef: "ignored", EvidenceRef: "ignored"}, nil
		}
		return runner.Reconciliation{}, errors.New("provider lookup unavailable")
	}}
	plain, _ := settleJob("plain", "amb")
	r := b.runner(nil, job, plain)
	first := b.succeed(r, runner.StartParams{Job: "transfer"})
	b.succeed(r, runner.StartParams{Job: "plain"})
	gen := first.Generation

	x1, x2, x3, x4 := b.mustEntry("transfer", "x1"), b.mustEntry("transfer", "x2"), b.mustEntry("transfer", "x3"), b.mustEntry("transfer", "x4")
	got, err := b.reconcile(r, x1.ID, "ops")
	if err != nil || got.State != bt.LedgerConfirmed || deref(got.EvidenceRef) != "provider-tx-991" || deref(got.EffectRef) != "tx-991" {
		t.Fatalf("reconcile x1: %v %+v, want CONFIRMED with the provider's effect id and evidence", err, got)
	}
	if asked["x1"] != runner.IdempotencyKey("transfer", gen, "x1", "") {
		t.Fatalf("the hook was asked about key %q, want the entry's idempotency key", asked["x1"])
	}
	got, err = b.reconcile(r, x2.ID, "ops")
	if err != nil || got.State != bt.LedgerNotApplied || deref(got.EffectRef) == "ignored" || deref(got.EvidenceRef) == "ignored" {
		t.Fatalf("reconcile x2: %v %+v, want NOT_APPLIED, with no effect or evidence from a negative answer", err, got)
	}
	if _, err := b.reconcile(r, x3.ID, "ops"); err == nil || b.mustEntry("transfer", "x3").State != bt.LedgerAmbiguous {
		t.Fatalf("a failing hook: %v, want an error and x3 left AMBIGUOUS", err)
	}
	if _, err := b.reconcile(r, x1.ID, "ops"); code(err) != bt.CodeConflict {
		t.Fatalf("reconcile of a confirmed entry: %v, want CONFLICT", err)
	}
	if _, err := b.reconcile(r, x4.ID, "ops"); code(err) != bt.CodeConflict {
		t.Fatalf("reconcile of an entry never in doubt: %v, want CONFLICT", err)
	}
	if _, err := b.reconcile(r, 999999, "ops"); code(err) != bt.CodeNotFound {
		t.Fatalf("reconcile of a missing entry: %v, want NOT_FOUND", err)
	}
	if _, err := b.reconcile(r, b.mustEntry("plain", "amb").ID, "ops"); code(err) != bt.CodeInvalidInput {
		t.Fatalf("reconcile for a job without a hook: %v, want INVALID_INPUT", err)
	}
	b.wantAudit("ops", "reconcile", "ledger:"+itoa(x1.ID), string(bt.LedgerConfirmed))
	b.wantAudit("ops", "reconcile", "ledger:"+itoa(x2.ID), string(bt.LedgerNotApplied))
	b.wantAudit("ops", "reconcile", "ledger:"+itoa(x1.ID), string(bt.CodeConflict))

	// By hand: a note always, evidence to confirm.
	for _, c := range []struct {
		res            runner.Resolution
		evidence, note string
	}{{runner.ResolveConfirmed, "", "seen in the bank statement"}, {runner.ResolveNotApplied, "", "  "}, {"MAYBE", "e", "n"}} {
		if _, err := r.Ledger().ResolveAmbiguous(ctx, x3.ID, c.res, c.evidence, c.note, "erin"); code(err) != bt.CodeInvalidInput {
			t.Fatalf("resolve %+v: %v, want INVALID_INPUT", c, err)
		}
	}
	if e := b.mustEntry("transfer", "x3"); e.State != bt.LedgerAmbiguous {
		t.Fatalf("a refused resolution changed x3 to %s", e.State)
	}
	got, err = r.Ledger().ResolveAmbiguous(ctx, x3.ID, runner.ResolveConfirmed, "stmt-2024-07-line-12", "seen in the bank statement", "erin")
	if err != nil || got.State != bt.LedgerConfirmed || deref(got.EvidenceRef) != "stmt-2024-07-line-12" || !strings.Contains(deref(got.LastError), "bank statement") {
		t.Fatalf("resolve by hand: %v %+v, want CONFIRMED with evidence and the note", err, got)
	}
	if _, err := r.Ledger().ResolveAmbiguous(ctx, x3.ID, runner.ResolveNotApplied, "", "changed my mind", "erin"); code(err) != bt.CodeConflict {
		t.Fatalf("resolving a resolved entry: %v, want CONFLICT", err)
	}
	if _, err := r.Ledger().ResolveAmbiguous(ctx, x4.ID, runner.ResolveNotApplied, "", "why not", "erin"); code(err) != bt.CodeConflict {
		t.Fatalf("resolving a confirmed entry: %v, want CONFLICT", err)
	}
	b.wantAudit("erin", "resolveAmbiguous", "ledger:"+itoa(x3.ID), string(bt.CodeInvalidInput))
	b.wantAudit("erin", "resolveAmbiguous", "ledger:"+itoa(x3.ID), string(bt.LedgerConfirmed))
	b.wantAudit("erin", "resolveAmbiguous", "ledger:"+itoa(x3.ID), string(bt.CodeConflict))
	counts := b.checkCounts(r, "transfer", gen)
	if want := (map[bt.LedgerState]int64{bt.LedgerConfirmed: 3, bt.LedgerNotApplied: 1}); !sameCounts(counts, want) {
		t.Fatalf("counts after resolutions %v, want %v", counts, want)
	}

	// The next run retries only the NOT_APPLIED target.
	phase.Store(2)
	resume := b.succeed(r, runner.StartParams{Job: "transfer", Mode: bt.ModeResume})
	for target, want := range map[string]int{"x1": 1, "x2": 2, "x3": 1, "x4": 1} {
		if n := base.callsOf(target); n != want {
			t.Errorf("%s called %d times, want %d", target, n, want)
		}
	}
	if e := b.mustEntry("transfer", "x2"); e.State != bt.LedgerConfirmed || e.Attempt != 2 {
		t.Fatalf("x2 after the resume: %s attempt %d, want CONFIRMED attempt 2", e.State, e.Attempt)
	}
	b.wantCounters(resume, counters{processed: 4, succeeded: 1, skipped: 3})
	b.checkCounts(r, "transfer", gen, resume.ID)
}

func TestSensitiveEvidenceMaskedAtRest(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	const paid, reconciled, byHand = "tok_4242424242424242", "prov_secret_1111", "stmt_secret_998877"
	base := newLedgerJob("cards", "c1", "c2", "c3")
	base.info.SensitiveEvidence = true
	base.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if target != "c1" {
			return runner.Ambiguous(errors.New("timeout after send"))
		}
		a.SetEffectRef("charge-c1")
		a.SetEvidenceRef(paid)
		return nil
	}
	job := &reconcilingJob{ledgerJob: base, reconcile: func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		return runner.Reconciliation{Applied: true, EvidenceRef: reconciled}, nil
	}}
	r := b.runner(nil, job)
	b.succeed(r, runner.StartParams{Job: "cards"})
	if _, err := b.reconcile(r, b.mustEntry("cards", "c2").ID, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ledger().ResolveAmbiguous(ctx, b.mustEntry("cards", "c3").ID, runner.ResolveConfirmed, byHand, "", "ops"); code(err) != bt.CodeInvalidInput {
		t.Fatalf("resolution without a note: %v, want INVALID_INPUT", err)
	}
	if _, err := r.Ledger().ResolveAmbiguous(ctx, b.mustEntry("cards", "c3").ID, runner.ResolveConfirmed, byHand, "matched by amount", "ops"); err != nil {
		t.Fatal(err)
	}
	for target, raw := range map[string]string{"c1": paid, "c2": reconciled, "c3": byHand} {
		e := b.mustEntry("cards", target)
		ev := deref(e.EvidenceRef)
		if e.State != bt.LedgerConfirmed || ev == raw || strings.Contains(ev, raw[5:]) || !strings.HasPrefix(ev, raw[:4]) || !strings.Contains(ev, "sha256:") {
			t.Errorf("%s evidence at rest %q, want a masked hint of %q", target, ev, raw)
		}
	}
	if e := b.mustEntry("cards", "c1"); deref(e.EffectRef) != "charge-c1" {
		t.Errorf("effect ref %q, want it unmasked", deref(e.EffectRef))
	}
	for _, raw := range []string{paid, reconciled, byHand} {
		if n := b.count(`SELECT count(*) FROM audit_log WHERE arguments::text LIKE '%' || $1 || '%'`, raw[5:]); n != 0 {
			t.Errorf("the audit log keeps sensitive evidence %q in %d rows", raw, n)
		}
		if n := b.count(`SELECT count(*) FROM job_ledger WHERE concat(evidence_ref, last_error, effect_ref) LIKE '%' || $1 || '%'`, raw[5:]); n != 0 {
			t.Errorf("the ledger keeps sensitive evidence %q", raw)
		}
	}
}

func itoa(n int64) string { return strings.TrimPrefix(runTarget(n), "run:") }
