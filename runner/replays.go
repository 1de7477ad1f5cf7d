package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// Preflight computes what replaying scope of a run's generation would do and whether it may:
// counts by state (from counters), the last checkpoint's age, the downstream error rate over
// five minutes, whether the job's code changed since the run, whether approval is needed, and
// every check with its value and verdict.
func (s *ReplayService) Preflight(ctx context.Context, runID int64, scope bt.ReplayScope) (*bt.Preflight, error) {
	r := s.r
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
	judgeDownstream(p, conds, calls)
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

// Actor is who calls an operation: the name recorded in runs and the audit log, and the
// api_tokens id of the token the call came with. TokenID 0 is code calling without a token (a
// tool or test linked with the runner): such a caller is known by its name alone.
type Actor struct {
	Name    string
	TokenID int64
}

func (a Actor) name() string { return actorOr(a.Name) }

func (a Actor) tokenID() *int64 {
	if a.TokenID == 0 {
		return nil
	}
	id := a.TokenID
	return &id
}

// isRequester reports whether by is the identity that made req. Identities are compared by
// token id; the name counts too, since it is all a caller without a token has, and a token
// name is never reissued, so equal names are the same token (or code speaking as it). The
// four-eyes rule thus holds for tokens, for code, and between the two.
func isRequester(req *bt.ReplayRequest, by Actor) bool {
	if by.TokenID != 0 && req.RequestedByTokenID != nil && *req.RequestedByTokenID == by.TokenID {
		return true
	}
	return by.name() == req.RequestedBy
}

// ReplayParams is a replay request.
type ReplayParams struct {
	RunID           int64
	Scope           bt.ReplayScope
	Reason          string
	CompensationRef string
	Actor           string
	// ActorTokenID is the requester's api_tokens id; 0 for a request made by code.
	ActorTokenID int64
}

// checkRequestText trims and checks a request's reason and compensation reference.
func checkRequestText(reason, compensationRef *string) error {
	*reason = strings.TrimSpace(*reason)
	*compensationRef = strings.TrimSpace(*compensationRef)
	switch {
	case *reason == "":
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "a replay needs a reason", Field: "reason"}
	case len(*reason) > 2000:
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "reason is longer than 2000 characters", Field: "reason"}
	case len(*compensationRef) > 500:
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "compensation reference is longer than 500 characters", Field: "compensationRef"}
	}
	return nil
}

// Request records a replay request with its preflight. It comes back BLOCKED (with the
// blocking reasons; REPLAY_BLOCKED is returned beside it), PENDING_APPROVAL, or — when no
// approval is needed — EXECUTED with the replay run started on this instance. A HIGH-risk
// request without a compensation reference is refused with APPROVAL_REQUIRED and not recorded.
func (s *ReplayService) Request(ctx context.Context, p ReplayParams) (req *bt.ReplayRequest, err error) {
	r := s.r
	args := map[string]any{"runId": p.RunID, "scope": p.Scope, "reason": p.Reason, "compensationRef": p.CompensationRef}
	defer func() {
		if req == nil { // recorded requests are audited with their insert
			r.audit(ctx, p.Actor, "requestReplay", fmt.Sprintf("run:%d", p.RunID), args, err)
		}
	}()
	if err := checkRequestText(&p.Reason, &p.CompensationRef); err != nil {
		return nil, err
	}
	pf, err := r.Replays().Preflight(ctx, p.RunID, p.Scope)
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
	return r.recordRequest(ctx, &bt.ReplayRequest{Kind: bt.KindReplay, JobName: run.JobName, SourceRunID: run.ID,
		Generation: run.Generation, Scope: p.Scope, Preflight: *pf, Reason: p.Reason},
		p.CompensationRef, Actor{Name: p.Actor, TokenID: p.ActorTokenID}, "requestReplay", args)
}

// recordRequest records a replay or RESTART request with the status its preflight calls for,
// and runs it at once when it needs no approval.
func (r *Runner) recordRequest(ctx context.Context, req *bt.ReplayRequest, compensationRef string, by Actor, action string, args map[string]any) (*bt.ReplayRequest, error) {
	pf := &req.Preflight
	req.Status = bt.ReplayApproved
	switch {
	case pf.Blocked:
		req.Status = bt.ReplayBlocked
	case pf.RequiresApproval:
		req.Status = bt.ReplayPendingApproval
	}
	if compensationRef != "" {
		req.CompensationRef = &compensationRef
	}
	req.RequestedBy, req.RequestedByTokenID = by.name(), by.tokenID()
	out, err := r.store.InsertReplay(ctx, req, postgres.AuditRecord{Actor: by.name(), Action: action, Arguments: args, Outcome: string(req.Status)})
	if err != nil {
		return nil, err
	}
	switch out.Status {
	case bt.ReplayBlocked:
		return out, &bt.Error{Code: bt.CodeReplayBlocked, Message: kindWord(out) + " blocked: " + strings.Join(pf.BlockingReasons, "; ")}
	case bt.ReplayApproved:
		return r.executeReplay(ctx, out, by)
	}
	return out, nil
}

// RestartParams is a request to RESTART a job whose RESTART the gate holds (see Start): a
// HIGH-risk job, or one whose current generation holds targets in doubt.
type RestartParams struct {
	Job    string
	Reason string
	// CompensationRef is required for a HIGH-risk job: where the plan to undo the repeated
	// effects lives.
	CompensationRef string
	Actor           string
	// ActorTokenID is the requester's api_tokens id; 0 for a request made by code.
	ActorTokenID int64
}

// RequestRestart records a request to RESTART a job, of kind RESTART and scope FULL, with the
// RESTART preflight of the job's current generation. It follows the replay lifecycle: BLOCKED
// (REPLAY_BLOCKED returned beside it) while targets are in doubt, PENDING_APPROVAL for a
// HIGH-risk job (which needs a compensation reference, or APPROVAL_REQUIRED and nothing is
// recorded), or EXECUTED at once with its RESTART run started when nothing calls for approval.
// Once approved by another identity (ReplayService.Approve), the request starts a RESTART run: a new
// generation. A job that has never run is INVALID_INPUT: its RESTART repeats nothing and is
// not gated.
func (s *ReplayService) RequestRestart(ctx context.Context, p RestartParams) (req *bt.ReplayRequest, err error) {
	r := s.r
	args := map[string]any{"job": p.Job, "reason": p.Reason, "compensationRef": p.CompensationRef}
	defer func() {
		if req == nil {
			r.audit(ctx, p.Actor, "requestRestart", "job:"+p.Job, args, err)
		}
	}()
	if err := checkRequestText(&p.Reason, &p.CompensationRef); err != nil {
		return nil, err
	}
	pf, err := r.Replays().RestartPreflight(ctx, p.Job)
	if err != nil {
		return nil, err
	}
	if pf == nil {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Field: "name",
			Message: fmt.Sprintf("job %s has never run: its RESTART repeats nothing and needs no request; start it with startJob", p.Job)}
	}
	if pf.RiskLevel == bt.RiskHigh && p.CompensationRef == "" {
		return nil, &bt.Error{Code: bt.CodeApprovalRequired, Field: "compensationRef",
			Message: "a HIGH-risk RESTART calls every target again: it needs a compensation reference (how to undo it) and a second person's approval"}
	}
	return r.recordRequest(ctx, &bt.ReplayRequest{Kind: bt.KindRestart, JobName: p.Job, SourceRunID: pf.RunID,
		Generation: pf.Generation, Scope: bt.ScopeFull, Preflight: *pf, Reason: p.Reason},
		p.CompensationRef, Actor{Name: p.Actor, TokenID: p.ActorTokenID}, "requestRestart", args)
}

// RestartPreflight computes what a RESTART of job would do and whether it may: the counts of
// its current generation (whose targets a new generation calls again under new keys), targets
// in doubt (AMBIGUOUS_EFFECT or IN_FLIGHT: they block), an active run (blocks), the stop
// conditions over the last five minutes, and approval for a HIGH-risk job. RunID is the newest
// run of the current generation. It returns nil and no error for a job that has never run.
func (s *ReplayService) RestartPreflight(ctx context.Context, job string) (*bt.Preflight, error) {
	r := s.r
	settings, err := r.store.Job(ctx, job)
	if err != nil {
		return nil, err
	}
	source, err := r.restartSource(ctx, settings)
	if err != nil || source == nil {
		return nil, err
	}
	gen := settings.CurrentGeneration
	counts, err := r.store.LedgerCounts(ctx, job, gen, 0)
	if err != nil {
		return nil, err
	}
	now, err := r.store.Now(ctx)
	if err != nil {
		return nil, err
	}
	p := &bt.Preflight{
		JobName: job, RunID: source.ID, Generation: gen, Scope: bt.ScopeFull, Kind: bt.KindRestart, RiskLevel: settings.RiskLevel,
		Confirmed: counts[bt.LedgerConfirmed], Ambiguous: counts[bt.LedgerAmbiguous], InFlight: counts[bt.LedgerInFlight],
		FailedByClass: map[bt.LedgerState]int64{}, FixQueue: counts[bt.LedgerBugSuspected],
		RunJobVersion: source.JobVersion, CurrentJobVersion: settings.JobVersion, ComputedAt: now,
	}
	for st, n := range counts {
		if st.Failed() {
			p.FailedByClass[st] = n
		}
		p.TargetsInScope += n
	}
	if age, err := r.store.CheckpointAge(ctx, job, gen); err != nil {
		return nil, err
	} else if age != nil {
		secs := age.Seconds()
		p.LastCheckpointAgeSecs = &secs
	}
	calls, downstream, _, err := r.store.CallStats(ctx, job, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	p.DownstreamCalls = calls
	if calls > 0 {
		p.DownstreamErrorRate = float64(downstream) / float64(calls)
	}
	registered, ok := r.Job(job)
	if ok {
		p.CurrentJobVersion = registered.Info().Version
	}
	p.JobVersionChanged = p.RunJobVersion != p.CurrentJobVersion

	block := func(reason string) { p.Blocked = true; p.BlockingReasons = append(p.BlockingReasons, reason) }
	check := func(name string, value, threshold float64, v bt.Verdict, detail string) {
		p.Checks = append(p.Checks, bt.Check{Name: name, Value: value, Threshold: threshold, Verdict: v, Detail: detail})
	}
	if !ok {
		block(fmt.Sprintf("job %s is not registered on this instance", job))
	}
	if active, err := r.store.ActiveRun(ctx, job); err != nil {
		return nil, err
	} else if active != nil {
		block(fmt.Sprintf("job %s has an active run (%d): wait for it to finish or cancel it", job, active.ID))
	}
	if p.Ambiguous > 0 {
		check("ambiguous effects", float64(p.Ambiguous), 0, bt.VerdictBlock, "a new generation would call them again under new keys")
		block(fmt.Sprintf("%d target(s) of generation %d are AMBIGUOUS_EFFECT: reconcile or resolve them before a RESTART", p.Ambiguous, gen))
	} else {
		check("ambiguous effects", 0, 0, bt.VerdictOK, "none")
	}
	if p.InFlight > 0 {
		check("in-flight intents", float64(p.InFlight), 0, bt.VerdictBlock, "intents without an outcome: they must become AMBIGUOUS_EFFECT and be settled first")
		block(fmt.Sprintf("%d target(s) of generation %d are IN_FLIGHT: wait for their run to end (they then become AMBIGUOUS_EFFECT) and settle them before a RESTART", p.InFlight, gen))
	}
	check("targets called again", float64(p.TargetsInScope), 0, bt.VerdictOK,
		fmt.Sprintf("generation %d recorded %d target(s), %d CONFIRMED: generation %d calls every target again under new keys", gen, p.TargetsInScope, p.Confirmed, gen+1))
	conds := DefaultStopConditions()
	if ok && registered.Info().StopConditions != nil {
		conds = registered.Info().StopConditions
	}
	judgeDownstream(p, conds, calls)
	if settings.RiskLevel == bt.RiskHigh {
		if p.Confirmed > 0 {
			check("confirmed effects", float64(p.Confirmed), 0, bt.VerdictWarn,
				fmt.Sprintf("%d effect(s) confirmed in generation %d would be made again under new keys", p.Confirmed, gen))
		}
		p.RequiresApproval = true
		p.ApprovalReasons = append(p.ApprovalReasons, "HIGH-risk job: a RESTART calls every target again, so a second person must approve, with a compensation reference")
	}
	return p, nil
}

// restartSource returns the run a RESTART of the job supersedes: the newest run of its current
// generation, or its newest run at all; nil when the job has never run.
func (r *Runner) restartSource(ctx context.Context, settings *bt.JobSettings) (*bt.RunRecord, error) {
	run, err := r.store.GenerationRun(ctx, settings.Name, settings.CurrentGeneration)
	if err != nil || run != nil {
		return run, err
	}
	return r.store.LastRun(ctx, settings.Name)
}

// restartGate refuses a manual RESTART that could repeat effects: REPLAY_BLOCKED while the
// current generation holds AMBIGUOUS_EFFECT or IN_FLIGHT targets, APPROVAL_REQUIRED for a
// HIGH-risk job. Either message names the way to go on. A job that has never run is not gated:
// there is nothing to repeat.
func (r *Runner) restartGate(ctx context.Context, job string) error {
	settings, err := r.store.Job(ctx, job)
	if err != nil {
		return fmt.Errorf("restart gate of %s: %w", job, err)
	}
	source, err := r.restartSource(ctx, settings)
	if err != nil {
		return fmt.Errorf("restart gate of %s: %w", job, err)
	}
	if source == nil {
		return nil
	}
	gen := settings.CurrentGeneration
	counts, err := r.store.LedgerCounts(ctx, job, gen, 0)
	if err != nil {
		return fmt.Errorf("restart gate of %s: %w", job, err)
	}
	amb, inFlight := counts[bt.LedgerAmbiguous], counts[bt.LedgerInFlight]
	if amb == 0 && inFlight > 0 {
		// IN_FLIGHT targets of a run still going are that run's: this start is refused as
		// ALREADY_RUNNING, as it would be without the gate.
		if active, err := r.store.ActiveRun(ctx, job); err != nil {
			return fmt.Errorf("restart gate of %s: %w", job, err)
		} else if active != nil {
			return bt.Errorf(bt.CodeAlreadyRunning, "job %q already has an active run (%d)", job, active.ID)
		}
	}
	if amb > 0 || inFlight > 0 {
		return &bt.Error{Code: bt.CodeReplayBlocked, Field: "mode", Message: fmt.Sprintf(
			"RESTART of %s refused: generation %d holds %d AMBIGUOUS_EFFECT and %d IN_FLIGHT target(s), which a new generation would call again under new keys. "+
				"Settle them first (reconcileEntry or resolveAmbiguous; IN_FLIGHT targets become AMBIGUOUS_EFFECT once their run is found gone), "+
				"then RESTART again, or request it with the requestRestart mutation (baton jobs restart %s --request)", job, gen, amb, inFlight, job)}
	}
	if settings.RiskLevel == bt.RiskHigh {
		return &bt.Error{Code: bt.CodeApprovalRequired, Field: "mode", Message: fmt.Sprintf(
			"RESTART of HIGH-risk job %s refused: it opens generation %d and calls every target again under new keys, so it needs a preflight and a second person's approval. "+
				"Request it with the requestRestart mutation, with a reason and a compensation reference (baton jobs restart %s --request --reason ... --compensation-ref ...); "+
				"RESUME continues generation %d without repeating effects", job, gen+1, job, gen)}
	}
	return nil
}

// Approve approves a PENDING_APPROVAL request (a replay, or a RESTART) and starts its
// run; the request becomes EXECUTED. The approver must be another identity than the requester
// (SELF_APPROVAL; see Actor). The preflight is computed again: a request that has become
// blocked is marked BLOCKED instead, REPLAY_BLOCKED returned beside it. A request whose run
// could not start stays APPROVED, the error returned: Execute starts it later.
func (s *ReplayService) Approve(ctx context.Context, requestID int64, by Actor, note string) (req *bt.ReplayRequest, err error) {
	r := s.r
	args := map[string]any{"requestId": requestID, "note": note}
	defer func() {
		if err != nil {
			r.audit(ctx, by.Name, "approveReplay", fmt.Sprintf("replay:%d", requestID), args, err)
		}
	}()
	cur, err := r.store.ReplayRequest(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if cur.Status != bt.ReplayPendingApproval {
		return nil, bt.Errorf(bt.CodeConflict, "replay request %d is %s, not PENDING_APPROVAL", requestID, cur.Status)
	}
	if isRequester(cur, by) {
		return nil, bt.Errorf(bt.CodeSelfApproval, "%s requested this %s and cannot approve it: a second person must", cur.RequestedBy, kindWord(cur))
	}
	pf, err := r.requestPreflight(ctx, cur)
	if err != nil {
		return nil, err
	}
	name, n := by.name(), note
	if pf.Blocked {
		req, err := r.store.DecideReplay(ctx, requestID, postgres.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayBlocked,
			DecidedBy: &name, DecidedByTokenID: by.tokenID(), Note: &n, Preflight: pf},
			postgres.AuditRecord{Actor: name, Action: "approveReplay", Arguments: args, Outcome: string(bt.ReplayBlocked)})
		if err != nil {
			return nil, err
		}
		return req, &bt.Error{Code: bt.CodeReplayBlocked, Message: kindWord(cur) + " blocked since it was requested: " + strings.Join(pf.BlockingReasons, "; ")}
	}
	req, err = r.store.DecideReplay(ctx, requestID, postgres.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayApproved,
		DecidedBy: &name, DecidedByTokenID: by.tokenID(), Note: &n, Preflight: pf},
		postgres.AuditRecord{Actor: name, Action: "approveReplay", Arguments: args, Outcome: string(bt.ReplayApproved)})
	if err != nil {
		return nil, err
	}
	return r.executeReplay(ctx, req, by)
}

func kindWord(req *bt.ReplayRequest) string {
	if req.Kind == bt.KindRestart {
		return "RESTART"
	}
	return "replay"
}

// requestPreflight computes a request's preflight again. A RESTART request is blocked once
// the job's current generation is no longer the one it was requested for: it was approved
// for what that generation held.
func (r *Runner) requestPreflight(ctx context.Context, req *bt.ReplayRequest) (*bt.Preflight, error) {
	if req.Kind != bt.KindRestart {
		return r.Replays().Preflight(ctx, req.SourceRunID, req.Scope)
	}
	pf, err := r.Replays().RestartPreflight(ctx, req.JobName)
	if err != nil {
		return nil, err
	}
	if pf == nil { // its runs are gone: nothing left to judge by
		return nil, bt.Errorf(bt.CodeConflict, "job %s has no run left to restart from", req.JobName)
	}
	if pf.Generation != req.Generation {
		pf.Blocked = true
		pf.BlockingReasons = append(pf.BlockingReasons, fmt.Sprintf(
			"the job moved from generation %d to %d since the request: request the RESTART again", req.Generation, pf.Generation))
	}
	return pf, nil
}

// Execute starts the run of an APPROVED request whose run could not start when it was
// approved (no free slot, the job paused, another run active). The approval stands, so any
// caller allowed to execute may (the API gives it to approvers), the requester too. While the
// job has an active run it is ALREADY_RUNNING and the request stays APPROVED; otherwise the
// preflight is computed again, and a request that has become blocked is marked BLOCKED,
// REPLAY_BLOCKED returned beside it.
func (s *ReplayService) Execute(ctx context.Context, requestID int64, by Actor) (req *bt.ReplayRequest, err error) {
	r := s.r
	defer func() {
		if err != nil && req == nil {
			r.audit(ctx, by.Name, "executeReplay", fmt.Sprintf("replay:%d", requestID), nil, err)
		}
	}()
	cur, err := r.store.ReplayRequest(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if cur.Status != bt.ReplayApproved {
		return nil, bt.Errorf(bt.CodeConflict, "replay request %d is %s, not APPROVED", requestID, cur.Status)
	}
	if active, err := r.store.ActiveRun(ctx, cur.JobName); err != nil {
		return nil, err
	} else if active != nil {
		return nil, bt.Errorf(bt.CodeAlreadyRunning, "job %q has an active run (%d): execute the request once it ends", cur.JobName, active.ID)
	}
	pf, err := r.requestPreflight(ctx, cur)
	if err != nil {
		return nil, err
	}
	if pf.Blocked {
		name := by.name()
		out, err := r.store.DecideReplay(ctx, requestID, postgres.ReplayDecision{From: bt.ReplayApproved, To: bt.ReplayBlocked, Preflight: pf},
			postgres.AuditRecord{Actor: name, Action: "executeReplay", Outcome: string(bt.ReplayBlocked)})
		if err != nil {
			return nil, err
		}
		return out, &bt.Error{Code: bt.CodeReplayBlocked, Message: kindWord(cur) + " blocked since it was approved: " + strings.Join(pf.BlockingReasons, "; ")}
	}
	return r.executeReplay(ctx, cur, by)
}

// executeReplay starts an APPROVED request's run: a REPLAY of its generation, or a RESTART
// (past the gate, which the approval answered). A start that fails leaves the request
// APPROVED and returns it with the error.
func (r *Runner) executeReplay(ctx context.Context, req *bt.ReplayRequest, by Actor) (*bt.ReplayRequest, error) {
	id, actor := req.ID, by.name()
	p := StartParams{Job: req.JobName, Trigger: bt.TriggerReplay, Mode: bt.ModeResume, Actor: actor,
		Generation: req.Generation, FromStart: true, ReplayRequestID: &id, ReplayScope: req.Scope}
	if req.Kind == bt.KindRestart {
		p = StartParams{Job: req.JobName, Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: actor,
			ReplayRequestID: &id, approvedRestart: true, noAudit: true}
	}
	run, err := r.Start(ctx, p)
	if err != nil {
		r.audit(ctx, actor, "executeReplay", fmt.Sprintf("replay:%d", id), nil, err)
		var be *bt.Error
		if errors.As(err, &be) { // the code stays the start's; the message says what is left to do
			return req, &bt.Error{Code: be.Code, Field: be.Field, Message: fmt.Sprintf(
				"%s %d is approved but its run did not start: %s. It stays APPROVED: run it with executeReplay once that is cleared", kindWord(req), id, be.Message)}
		}
		return req, fmt.Errorf("%s %d approved but its run did not start (execute it again with executeReplay): %w", kindWord(req), id, err)
	}
	runID := runIDOf(run)
	return r.store.DecideReplay(ctx, id, postgres.ReplayDecision{From: bt.ReplayApproved, To: bt.ReplayExecuted, RunID: &runID},
		postgres.AuditRecord{Actor: actor, Action: "executeReplay", Arguments: map[string]any{"runId": runID}, Outcome: string(bt.ReplayExecuted)})
}

// Reject rejects a PENDING_APPROVAL request. As with approval, the decider must be
// another identity than the requester (SELF_APPROVAL): a request is decided by a second
// person either way.
func (s *ReplayService) Reject(ctx context.Context, requestID int64, by Actor, note string) (req *bt.ReplayRequest, err error) {
	r := s.r
	target := fmt.Sprintf("replay:%d", requestID)
	defer func() {
		if err != nil {
			r.audit(ctx, by.Name, "rejectReplay", target, map[string]any{"note": note}, err)
		}
	}()
	cur, err := r.store.ReplayRequest(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if cur.Status == bt.ReplayPendingApproval && isRequester(cur, by) {
		return nil, bt.Errorf(bt.CodeSelfApproval, "%s requested this %s and cannot reject it: a second person decides", cur.RequestedBy, kindWord(cur))
	}
	name, n := by.name(), note
	return r.store.DecideReplay(ctx, requestID, postgres.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayRejected,
		DecidedBy: &name, DecidedByTokenID: by.tokenID(), Note: &n},
		postgres.AuditRecord{Actor: name, Action: "rejectReplay", Arguments: map[string]any{"requestId": requestID, "note": note}, Outcome: string(bt.ReplayRejected)})
}

// List lists replay requests, newest first, by keyset on id.
func (s *ReplayService) List(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error) {
	r := s.r
	if limit <= 0 {
		limit = 20
	}
	return r.store.ReplayRequests(ctx, statuses, beforeID, limit)
}

// Get returns one replay request, or NOT_FOUND.
func (s *ReplayService) Get(ctx context.Context, id int64) (*bt.ReplayRequest, error) {
	r := s.r
	return r.store.ReplayRequest(ctx, id)
}

// repeating calls into a failing downstream only adds load and doubt.
func judgeDownstream(p *bt.Preflight, conds []StopCondition, calls int64) {
	for _, c := range conds {
		c = c.withDefaults()
		if c.Metric != DownstreamErrorRate {
			continue
		}
		detail := fmt.Sprintf("%.1f%% of %d external calls failed downstream in the last 5 minutes", p.DownstreamErrorRate*100, calls)
		verdict := bt.VerdictOK
		switch {
		case calls < int64(c.MinCalls):
			detail += fmt.Sprintf(" (no verdict under %d calls)", c.MinCalls)
		case p.DownstreamErrorRate > c.Threshold:
			verdict = bt.VerdictBlock
			p.Blocked = true
			p.BlockingReasons = append(p.BlockingReasons, fmt.Sprintf("stop condition %q: %s (threshold %.1f%%)", c.Name, detail, c.Threshold*100))
		}
		p.Checks = append(p.Checks, bt.Check{Name: c.Name, Value: p.DownstreamErrorRate, Threshold: c.Threshold, Verdict: verdict, Detail: detail})
	}
}
