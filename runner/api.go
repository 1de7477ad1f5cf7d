package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// Reconciler is an optional interface a Job implements to ask the outside system whether an
// AMBIGUOUS_EFFECT target's effect happened.
type Reconciler interface {
	Reconcile(ctx context.Context, target, step, idempotencyKey string) (Reconciliation, error)
}

// Reconciliation is what the outside system said about one idempotency key. Applied resolves
// the target CONFIRMED with EffectRef (the outside system's id for the effect, as
// Attempt.SetEffectRef records it on a normal call) and EvidenceRef; not applied resolves it
// NOT_APPLIED, safe to retry with the same key.
type Reconciliation struct {
	Applied     bool
	EffectRef   string
	EvidenceRef string
}

// LedgerFilter selects ledger entries of a job, by keyset on id (ascending).
type LedgerFilter struct {
	JobName      string
	States       []LedgerState
	RunID        int64 // 0: any run
	Generation   int64 // 0: any generation
	TargetPrefix string
	AfterID      int64
	Limit        int // 1..1000; 0 means 20
}

// Ledger lists ledger entries matching f.
func (r *Runner) Ledger(ctx context.Context, f LedgerFilter) ([]*bt.LedgerEntry, error) {
	if f.Limit < 0 || f.Limit > 1000 {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "limit must be between 1 and 1000", Field: "first"}
	}
	return r.store.Ledger(ctx, postgres.LedgerQuery(f))
}

// LedgerEntry returns one ledger entry, or NOT_FOUND.
func (r *Runner) LedgerEntry(ctx context.Context, id int64) (*bt.LedgerEntry, error) {
	return r.store.LedgerEntry(ctx, id)
}

// LedgerSummary returns per-state counts of a run (runID != 0) or of a generation, from the
// counters kept in the item transactions (never a COUNT over the ledger).
func (r *Runner) LedgerSummary(ctx context.Context, job string, generation, runID int64) (map[LedgerState]int64, error) {
	return r.store.LedgerCounts(ctx, job, generation, runID)
}

// Audit records a mutation in audit_log. The runner audits its own control operations; the
// API audits what it refuses before reaching them.
func (r *Runner) Audit(ctx context.Context, actor, action, target string, args map[string]any, outcome string) error {
	return r.store.Audit(context.WithoutCancel(ctx), postgres.AuditRecord{Actor: actorOr(actor), Action: action, Target: target, Arguments: args, Outcome: outcome})
}

// audit records an operation's outcome: "ok" or the error's code.
func (r *Runner) audit(ctx context.Context, actor, action, target string, args map[string]any, err error) {
	outcome := "ok"
	if err != nil {
		outcome = string(bt.CodeOf(err))
		if outcome == "" {
			outcome = "error"
		}
	}
	if aerr := r.Audit(ctx, actor, action, target, args, outcome); aerr != nil {
		r.log.Error("write audit row", "action", action, "err", aerr)
	}
}

// AuditLog lists audit entries, newest first, by keyset on id.
func (r *Runner) AuditLog(ctx context.Context, beforeID int64, limit int) ([]bt.AuditEntry, error) {
	if limit <= 0 {
		limit = 20
	}
	return r.store.AuditLog(ctx, beforeID, limit)
}

// Preflight computes what replaying scope of a run's generation would do and whether it may:
// counts by state (from counters), the last checkpoint's age, the downstream error rate over
// five minutes, whether the job's code changed since the run, whether approval is needed, and
// every check with its value and verdict.
func (r *Runner) Preflight(ctx context.Context, runID int64, scope bt.ReplayScope) (*bt.Preflight, error) {
	if !scope.Valid() {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("unknown replay scope %q (TRANSIENT, FAILED or FULL)", scope), Field: "scope"}
	}
	run, err := r.store.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	settings, err := r.store.Job(ctx, run.JobName)
	if err != nil {
		return nil, err
	}
	counts, err := r.store.LedgerCounts(ctx, run.JobName, run.Generation, 0)
	if err != nil {
		return nil, err
	}
	now, err := r.store.Now(ctx)
	if err != nil {
		return nil, err
	}
	p := &bt.Preflight{
		JobName: run.JobName, RunID: run.ID, Generation: run.Generation, Scope: scope, RiskLevel: settings.RiskLevel,
		Confirmed: counts[bt.LedgerConfirmed], Ambiguous: counts[bt.LedgerAmbiguous], InFlight: counts[bt.LedgerInFlight],
		FailedByClass: map[bt.LedgerState]int64{}, FixQueue: counts[bt.LedgerBugSuspected],
		RunJobVersion: run.JobVersion, CurrentJobVersion: settings.JobVersion, ComputedAt: now,
	}
	for st, n := range counts {
		if st.Failed() {
			p.FailedByClass[st] = n
		}
	}
	inScope := map[bt.LedgerState]bool{}
	for _, st := range scope.States() {
		inScope[st] = true
		p.TargetsInScope += counts[st]
	}
	if age, err := r.store.CheckpointAge(ctx, run.JobName, run.Generation); err != nil {
		return nil, err
	} else if age != nil {
		secs := age.Seconds()
		p.LastCheckpointAgeSecs = &secs
	}
	calls, downstream, _, err := r.store.CallStats(ctx, run.JobName, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	p.DownstreamCalls = calls
	if calls > 0 {
		p.DownstreamErrorRate = float64(downstream) / float64(calls)
	}
	if job, ok := r.Job(run.JobName); ok {
		p.CurrentJobVersion = job.Info().Version
	}
	p.JobVersionChanged = p.RunJobVersion != p.CurrentJobVersion

	block := func(reason string) { p.Blocked = true; p.BlockingReasons = append(p.BlockingReasons, reason) }
	approve := func(reason string) { p.RequiresApproval = true; p.ApprovalReasons = append(p.ApprovalReasons, reason) }
	check := func(name string, value, threshold float64, v bt.Verdict, detail string) {
		p.Checks = append(p.Checks, bt.Check{Name: name, Value: value, Threshold: threshold, Verdict: v, Detail: detail})
	}

	if _, ok := r.Job(run.JobName); !ok {
		block(fmt.Sprintf("job %s is not registered on this instance", run.JobName))
	}
	if run.Status.Active() {
		block(fmt.Sprintf("run %d is still %s: wait for it to finish or cancel it", run.ID, run.Status))
	}
	if active, err := r.store.ActiveRun(ctx, run.JobName); err == nil && active != nil && active.ID != run.ID {
		block(fmt.Sprintf("job %s has an active run (%d)", run.JobName, active.ID))
	}
	switch {
	case p.Ambiguous > 0 && scope == bt.ScopeFull:
		check("ambiguous effects", float64(p.Ambiguous), 0, bt.VerdictBlock, "targets in doubt must be reconciled before a full replay")
		block(fmt.Sprintf("%d target(s) are AMBIGUOUS_EFFECT: reconcile them before a full replay", p.Ambiguous))
	case p.Ambiguous > 0:
		check("ambiguous effects", float64(p.Ambiguous), 0, bt.VerdictWarn, "they stay quarantined: this replay does not touch them")
	default:
		check("ambiguous effects", 0, 0, bt.VerdictOK, "none")
	}
	if p.InFlight > 0 && !run.Status.Active() {
		check("in-flight intents", float64(p.InFlight), 0, bt.VerdictWarn, "intents without outcome: they become AMBIGUOUS_EFFECT, never retried")
	}
	// A generation without ledger rows (pruned, or never written) has nothing to tell the
	// replay: every target would look new and be called again, whatever it had done.
	var rows int64
	for _, n := range counts {
		rows += n
	}
	if rows == 0 {
		check("ledger rows", 0, 1, bt.VerdictBlock, "the generation has no ledger rows: a replay would call every target anew")
		block(fmt.Sprintf("generation %d has no ledger rows (pruned by retention, or never written): nothing to replay from", run.Generation))
	}
	if p.TargetsInScope == 0 && scope != bt.ScopeFull {
		check("targets in scope", 0, 1, bt.VerdictBlock, "nothing to replay")
		block(fmt.Sprintf("no target of generation %d is in scope %s", run.Generation, scope))
	} else {
		check("targets in scope", float64(p.TargetsInScope), 1, bt.VerdictOK, fmt.Sprintf("%d target(s) would be retried", p.TargetsInScope))
	}
	if p.FixQueue > 0 {
		check("fix queue", float64(p.FixQueue), 0, bt.VerdictWarn,
			fmt.Sprintf("%d target(s) failed the same way 3 times: they go to the fix queue, not to retry", p.FixQueue))
	}
	// Stop conditions, judged on the job's calls over the last five minutes: replaying into a
	// failing downstream only adds load and doubt.
	conds := DefaultStopConditions()
	if job, ok := r.Job(run.JobName); ok && job.Info().StopConditions != nil {
		conds = job.Info().StopConditions
	}
	for _, c := range conds {
		c = c.withDefaults()
		if c.Metric != DownstreamErrorRate {
			continue
		}
		detail := fmt.Sprintf("%.1f%% of %d external calls failed downstream in the last 5 minutes", p.DownstreamErrorRate*100, calls)
		switch {
		case calls < int64(c.MinCalls):
			check(c.Name, p.DownstreamErrorRate, c.Threshold, bt.VerdictOK, detail+fmt.Sprintf(" (no verdict under %d calls)", c.MinCalls))
		case p.DownstreamErrorRate > c.Threshold:
			check(c.Name, p.DownstreamErrorRate, c.Threshold, bt.VerdictBlock, detail)
			block(fmt.Sprintf("stop condition %q: %s (threshold %.1f%%)", c.Name, detail, c.Threshold*100))
		default:
			check(c.Name, p.DownstreamErrorRate, c.Threshold, bt.VerdictOK, detail)
		}
	}
	if p.LastCheckpointAgeSecs != nil {
		check("last checkpoint age", *p.LastCheckpointAgeSecs, 0, bt.VerdictOK,
			fmt.Sprintf("the generation's checkpoint last moved %s ago", time.Duration(*p.LastCheckpointAgeSecs*float64(time.Second)).Round(time.Second)))
	}
	if p.JobVersionChanged {
		check("job version", 1, 0, bt.VerdictWarn, fmt.Sprintf("run used version %q, the code is now %q", p.RunJobVersion, p.CurrentJobVersion))
		approve(fmt.Sprintf("the job's code changed since the run (%q → %q)", p.RunJobVersion, p.CurrentJobVersion))
	}
	if settings.RiskLevel == bt.RiskHigh {
		approve("HIGH-risk job: a second person must approve, with a compensation reference")
	}
	return p, nil
}

// ReplayParams is a replay request.
type ReplayParams struct {
	RunID           int64
	Scope           bt.ReplayScope
	Reason          string
	CompensationRef string
	Actor           string
}

// RequestReplay records a replay request with its preflight. It comes back BLOCKED (with the
// blocking reasons; REPLAY_BLOCKED is returned beside it), PENDING_APPROVAL, or — when no
// approval is needed — EXECUTED with the replay run started on this instance. A HIGH-risk
// request without a compensation reference is refused with APPROVAL_REQUIRED and not recorded.
func (r *Runner) RequestReplay(ctx context.Context, p ReplayParams) (req *bt.ReplayRequest, err error) {
	args := map[string]any{"runId": p.RunID, "scope": p.Scope, "reason": p.Reason, "compensationRef": p.CompensationRef}
	defer func() {
		if req == nil { // recorded requests are audited with their insert
			r.audit(ctx, p.Actor, "requestReplay", fmt.Sprintf("run:%d", p.RunID), args, err)
		}
	}()
	p.Reason = strings.TrimSpace(p.Reason)
	p.CompensationRef = strings.TrimSpace(p.CompensationRef)
	switch {
	case p.Reason == "":
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "a replay needs a reason", Field: "reason"}
	case len(p.Reason) > 2000:
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "reason is longer than 2000 characters", Field: "reason"}
	case len(p.CompensationRef) > 500:
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "compensation reference is longer than 500 characters", Field: "compensationRef"}
	}
	pf, err := r.Preflight(ctx, p.RunID, p.Scope)
	if err != nil {
		return nil, err
	}
	if pf.RiskLevel == bt.RiskHigh && p.CompensationRef == "" {
		return nil, &bt.Error{Code: bt.CodeApprovalRequired, Field: "compensationRef",
			Message: "a HIGH-risk replay needs a compensation reference (how to undo it) and a second person's approval"}
	}
	run, err := r.store.Run(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	status := bt.ReplayApproved
	switch {
	case pf.Blocked:
		status = bt.ReplayBlocked
	case pf.RequiresApproval:
		status = bt.ReplayPendingApproval
	}
	var comp *string
	if p.CompensationRef != "" {
		comp = &p.CompensationRef
	}
	req, err = r.store.InsertReplay(ctx, &bt.ReplayRequest{
		JobName: run.JobName, SourceRunID: run.ID, Generation: run.Generation, Scope: p.Scope, Status: status,
		Preflight: *pf, Reason: p.Reason, CompensationRef: comp, RequestedBy: actorOr(p.Actor),
	}, postgres.AuditRecord{Actor: actorOr(p.Actor), Action: "requestReplay", Arguments: args, Outcome: string(status)})
	if err != nil {
		return nil, err
	}
	switch status {
	case bt.ReplayBlocked:
		return req, &bt.Error{Code: bt.CodeReplayBlocked, Message: "replay blocked: " + strings.Join(pf.BlockingReasons, "; ")}
	case bt.ReplayApproved:
		return r.executeReplay(ctx, req, actorOr(p.Actor))
	}
	return req, nil
}

// ApproveReplay approves a PENDING_APPROVAL request and starts its REPLAY run; the request
// becomes EXECUTED. The approver must not be the requester (SELF_APPROVAL). The preflight is
// computed again: a request that has become blocked is marked BLOCKED instead.
func (r *Runner) ApproveReplay(ctx context.Context, requestID int64, actor, note string) (req *bt.ReplayRequest, err error) {
	args := map[string]any{"requestId": requestID, "note": note}
	defer func() {
		if err != nil {
			r.audit(ctx, actor, "approveReplay", fmt.Sprintf("replay:%d", requestID), args, err)
		}
	}()
	cur, err := r.store.ReplayRequest(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if cur.Status != bt.ReplayPendingApproval {
		return nil, bt.Errorf(bt.CodeConflict, "replay request %d is %s, not PENDING_APPROVAL", requestID, cur.Status)
	}
	if actorOr(actor) == cur.RequestedBy {
		return nil, bt.Errorf(bt.CodeSelfApproval, "%s requested this replay and cannot approve it: a second person must", cur.RequestedBy)
	}
	pf, err := r.Preflight(ctx, cur.SourceRunID, cur.Scope)
	if err != nil {
		return nil, err
	}
	by, n := actorOr(actor), note
	if pf.Blocked {
		req, err := r.store.DecideReplay(ctx, requestID, postgres.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayBlocked,
			DecidedBy: &by, Note: &n, Preflight: pf}, postgres.AuditRecord{Actor: by, Action: "approveReplay", Arguments: args, Outcome: string(bt.ReplayBlocked)})
		if err != nil {
			return nil, err
		}
		return req, &bt.Error{Code: bt.CodeReplayBlocked, Message: "replay blocked since it was requested: " + strings.Join(pf.BlockingReasons, "; ")}
	}
	req, err = r.store.DecideReplay(ctx, requestID, postgres.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayApproved,
		DecidedBy: &by, Note: &n, Preflight: pf}, postgres.AuditRecord{Actor: by, Action: "approveReplay", Arguments: args, Outcome: string(bt.ReplayApproved)})
	if err != nil {
		return nil, err
	}
	return r.executeReplay(ctx, req, by)
}

// ExecuteReplay starts the REPLAY run of an APPROVED request whose run could not start when
// it was approved (no free slot, say).
func (r *Runner) ExecuteReplay(ctx context.Context, requestID int64, actor string) (*bt.ReplayRequest, error) {
	req, err := r.store.ReplayRequest(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if req.Status != bt.ReplayApproved {
		return nil, bt.Errorf(bt.CodeConflict, "replay request %d is %s, not APPROVED", requestID, req.Status)
	}
	return r.executeReplay(ctx, req, actorOr(actor))
}

func (r *Runner) executeReplay(ctx context.Context, req *bt.ReplayRequest, actor string) (*bt.ReplayRequest, error) {
	id := req.ID
	runID, err := r.Start(ctx, StartParams{Job: req.JobName, Trigger: bt.TriggerReplay, Mode: bt.ModeResume, Actor: actor,
		Generation: req.Generation, FromStart: true, ReplayRequestID: &id, ReplayScope: req.Scope})
	if err != nil {
		r.audit(ctx, actor, "executeReplay", fmt.Sprintf("replay:%d", id), nil, err)
		return req, fmt.Errorf("replay %d approved but its run did not start (run it again with ExecuteReplay): %w", id, err)
	}
	return r.store.DecideReplay(ctx, id, postgres.ReplayDecision{From: bt.ReplayApproved, To: bt.ReplayExecuted, RunID: &runID},
		postgres.AuditRecord{Actor: actor, Action: "executeReplay", Arguments: map[string]any{"runId": runID}, Outcome: string(bt.ReplayExecuted)})
}

// RejectReplay rejects a PENDING_APPROVAL request.
func (r *Runner) RejectReplay(ctx context.Context, requestID int64, actor, note string) (*bt.ReplayRequest, error) {
	by, n := actorOr(actor), note
	req, err := r.store.DecideReplay(ctx, requestID, postgres.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayRejected,
		DecidedBy: &by, Note: &n}, postgres.AuditRecord{Actor: by, Action: "rejectReplay", Arguments: map[string]any{"requestId": requestID, "note": note}, Outcome: string(bt.ReplayRejected)})
	if err != nil {
		r.audit(ctx, actor, "rejectReplay", fmt.Sprintf("replay:%d", requestID), map[string]any{"note": note}, err)
	}
	return req, err
}

// ReplayRequests lists replay requests, newest first, by keyset on id.
func (r *Runner) ReplayRequests(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error) {
	if limit <= 0 {
		limit = 20
	}
	return r.store.ReplayRequests(ctx, statuses, beforeID, limit)
}

// ReplayRequest returns one replay request, or NOT_FOUND.
func (r *Runner) ReplayRequest(ctx context.Context, id int64) (*bt.ReplayRequest, error) {
	return r.store.ReplayRequest(ctx, id)
}

// Resolution is how an ambiguous target is resolved.
type Resolution string

// Resolutions.
const (
	ResolveConfirmed  Resolution = "CONFIRMED"
	ResolveNotApplied Resolution = "NOT_APPLIED"
)

// ResolveAmbiguous resolves an AMBIGUOUS_EFFECT entry by hand. CONFIRMED needs an evidence
// reference; both need a note. Audited.
func (r *Runner) ResolveAmbiguous(ctx context.Context, entryID int64, res Resolution, evidenceRef, note, actor string) (*bt.LedgerEntry, error) {
	target := fmt.Sprintf("ledger:%d", entryID)
	evidenceRef, note = strings.TrimSpace(evidenceRef), strings.TrimSpace(note)
	// What reaches the ledger and the audit log: masked for a job with sensitive evidence.
	stored := evidenceRef
	if stored != "" {
		if e, lerr := r.store.LedgerEntry(ctx, entryID); lerr == nil {
			if job, ok := r.Job(e.JobName); ok && job.Info().SensitiveEvidence {
				stored = maskEvidence(stored)
			}
		}
	}
	args := map[string]any{"entryId": entryID, "resolution": res, "evidenceRef": stored, "note": note}
	var err error
	switch {
	case res != ResolveConfirmed && res != ResolveNotApplied:
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "resolution must be CONFIRMED or NOT_APPLIED", Field: "resolution"}
	case note == "":
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "say why in a note", Field: "note"}
	case res == ResolveConfirmed && evidenceRef == "":
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "confirming an effect needs an evidence reference", Field: "evidenceRef"}
	case len(note) > 2000 || len(evidenceRef) > 500:
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "note (2000) or evidence reference (500) too long"}
	}
	if err != nil {
		r.audit(ctx, actor, "resolveAmbiguous", target, args, err)
		return nil, err
	}
	var ev *string
	if stored != "" {
		ev = &stored
	}
	e, err := r.store.ResolveAmbiguous(ctx, entryID, bt.LedgerState(res), nil, ev, "resolved by hand: "+note,
		postgres.AuditRecord{Actor: actorOr(actor), Action: "resolveAmbiguous", Target: target, Arguments: args, Outcome: string(res)})
	if err != nil {
		r.audit(ctx, actor, "resolveAmbiguous", target, args, err)
	}
	return e, err
}
