package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// ReplayParams is a replay request.
type ReplayParams struct {
	RunID           int64
	Scope           bt.ReplayScope
	Reason          string
	CompensationRef string
	Actor           string
	// ActorTokenID is the requester's api_tokens id; 0 for a request made by code.
	ActorTokenID int64
	// TargetKeys narrows the replay to these targets of its scope (1 to MaxMembers); nil
	// replays every target of the scope.
	TargetKeys []string
}

// CheckTargets trims, dedupes and checks the selected targets of a replay: 1 to MaxMembers
// keys of 1 to 200 characters.
func CheckTargets(keys []string) ([]string, error) {
	if keys == nil {
		return nil, nil
	}
	out := make([]string, 0, len(keys))
	seen := map[string]bool{}
	for _, k := range keys {
		if k == "" || utf8.RuneCountInString(k) > 200 {
			return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "a target key is 1 to 200 characters", Field: "targetKeys"}
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == 0 || len(out) > MaxMembers {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("select 1 to %d targets", MaxMembers), Field: "targetKeys"}
	}
	return out, nil
}

// checkRequestText trims and checks a request's reason and compensation reference (limits in
// characters, as the API counts them).
func checkRequestText(reason, compensationRef *string) error {
	*reason = strings.TrimSpace(*reason)
	*compensationRef = strings.TrimSpace(*compensationRef)
	switch {
	case *reason == "":
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "a replay needs a reason", Field: "reason"}
	case utf8.RuneCountInString(*reason) > 2000:
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "reason is longer than 2000 characters", Field: "reason"}
	case utf8.RuneCountInString(*compensationRef) > 500:
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "compensation reference is longer than 500 characters", Field: "compensationRef"}
	}
	return nil
}

// Request records a replay request with its preflight. It comes back BLOCKED (with the
// blocking reasons; REPLAY_BLOCKED is returned beside it), PENDING_APPROVAL, or — when no
// approval is needed — EXECUTED with the replay run started on this instance. A HIGH-risk
// request without a compensation reference is refused with APPROVAL_REQUIRED and not recorded.
func (s *Service) Request(ctx context.Context, p ReplayParams) (req *bt.ReplayRequest, err error) {
	args := map[string]any{"runId": p.RunID, "scope": p.Scope, "reason": p.Reason, "compensationRef": p.CompensationRef}
	if p.TargetKeys != nil {
		args["targetKeys"] = p.TargetKeys
	}
	defer func() {
		if req == nil { // recorded requests are audited with their insert
			s.cfg.AuditFunc(ctx, p.Actor, "requestReplay", fmt.Sprintf("run:%d", p.RunID), args, err)
		}
	}()
	if err := checkRequestText(&p.Reason, &p.CompensationRef); err != nil {
		return nil, err
	}
	if p.TargetKeys, err = CheckTargets(p.TargetKeys); err != nil {
		return nil, err
	}
	pf, err := s.PreflightOf(ctx, p.RunID, p.Scope, p.TargetKeys)
	if err != nil {
		return nil, err
	}
	if pf.RiskLevel == bt.RiskHigh && p.CompensationRef == "" {
		return nil, &bt.Error{Code: bt.CodeApprovalRequired, Field: "compensationRef",
			Message: "a HIGH-risk replay needs a compensation reference (how to undo it) and a second person's approval"}
	}
	run, err := s.cfg.Store.Run(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	return s.recordRequest(ctx, &bt.ReplayRequest{Kind: bt.KindReplay, JobName: run.JobName, SourceRunID: run.ID,
		Generation: run.Generation, Scope: p.Scope, Preflight: *pf, Reason: p.Reason, TargetKeys: p.TargetKeys},
		p.CompensationRef, Actor{Name: p.Actor, TokenID: p.ActorTokenID}, "requestReplay", args)
}

// recordRequest records a replay or RESTART request with the status its preflight calls for,
// and runs it at once when it needs no approval.
func (s *Service) recordRequest(ctx context.Context, req *bt.ReplayRequest, compensationRef string, by Actor, action string, args map[string]any) (*bt.ReplayRequest, error) {
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
	out, err := s.cfg.Store.InsertReplay(ctx, req, store.AuditRecord{Actor: by.name(), Action: action, Arguments: args, Outcome: string(req.Status)})
	if err != nil {
		return nil, err
	}
	switch out.Status {
	case bt.ReplayBlocked:
		return out, &bt.Error{Code: bt.CodeReplayBlocked, Message: kindWord(out) + " blocked: " + strings.Join(pf.BlockingReasons, "; ")}
	case bt.ReplayApproved:
		return s.claimAndExecute(ctx, out, by)
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
// Once approved by another identity (Approve), the request starts a RESTART run: a new
// generation. A job that has never run is INVALID_INPUT: its RESTART repeats nothing and is
// not gated.
func (s *Service) RequestRestart(ctx context.Context, p RestartParams) (req *bt.ReplayRequest, err error) {
	args := map[string]any{"job": p.Job, "reason": p.Reason, "compensationRef": p.CompensationRef}
	defer func() {
		if req == nil {
			s.cfg.AuditFunc(ctx, p.Actor, "requestRestart", "job:"+p.Job, args, err)
		}
	}()
	if err := checkRequestText(&p.Reason, &p.CompensationRef); err != nil {
		return nil, err
	}
	pf, err := s.RestartPreflight(ctx, p.Job)
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
	return s.recordRequest(ctx, &bt.ReplayRequest{Kind: bt.KindRestart, JobName: p.Job, SourceRunID: pf.RunID,
		Generation: pf.Generation, Scope: bt.ScopeFull, Preflight: *pf, Reason: p.Reason},
		p.CompensationRef, Actor{Name: p.Actor, TokenID: p.ActorTokenID}, "requestRestart", args)
}

// Approve approves a PENDING_APPROVAL request (a replay, or a RESTART) and starts its
// run; the request becomes EXECUTED. The approver must be another identity than the requester
// (SELF_APPROVAL; see Actor). The request is judged again against the job as it is now: one
// that has become blocked is marked BLOCKED instead, REPLAY_BLOCKED returned beside it; one
// that asks for more than it was judged for (see rejudge) stays PENDING_APPROVAL with the
// reason, its fresh preflight stored, and APPROVAL_REQUIRED returned beside it: the approver
// looks again. A request whose run could not start stays APPROVED, the error returned:
// Execute starts it later.
func (s *Service) Approve(ctx context.Context, requestID int64, by Actor, note string) (req *bt.ReplayRequest, err error) {
	args := map[string]any{"requestId": requestID, "note": note}
	defer func() {
		if err != nil {
			s.cfg.AuditFunc(ctx, by.Name, "approveReplay", fmt.Sprintf("replay:%d", requestID), args, err)
		}
	}()
	cur, err := s.cfg.Store.ReplayRequest(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if cur.Status != bt.ReplayPendingApproval {
		return nil, bt.Errorf(bt.CodeConflict, "replay request %d is %s, not PENDING_APPROVAL", requestID, cur.Status)
	}
	if isRequester(cur, by) {
		return nil, bt.Errorf(bt.CodeSelfApproval, "%s requested this %s and cannot approve it: a second person must", cur.RequestedBy, kindWord(cur))
	}
	if cur.Kind == bt.KindSchedule {
		return scheduleDecisions{s}.approve(ctx, cur, by, note, args)
	}
	pf, err := s.requestPreflight(ctx, cur)
	if err != nil {
		return nil, err
	}
	name, n := by.name(), note
	if pf.Blocked {
		req, err := s.cfg.Store.DecideReplay(ctx, requestID, store.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayBlocked,
			DecidedBy: &name, DecidedByTokenID: by.tokenID(), Note: &n, Preflight: pf},
			store.AuditRecord{Actor: name, Action: "approveReplay", Arguments: args, Outcome: string(bt.ReplayBlocked)})
		if err != nil {
			return nil, err
		}
		return req, &bt.Error{Code: bt.CodeReplayBlocked, Message: kindWord(cur) + " blocked since it was requested: " + strings.Join(pf.BlockingReasons, "; ")}
	}
	if changed := rejudge(cur, pf, true); len(changed) > 0 {
		return reopen(ctx, s, cur, bt.ReplayPendingApproval, pf, changed, by, "approveReplay", args)
	}
	req, err = s.cfg.Store.DecideReplay(ctx, requestID, store.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayApproved,
		DecidedBy: &name, DecidedByTokenID: by.tokenID(), Note: &n, Preflight: pf},
		store.AuditRecord{Actor: name, Action: "approveReplay", Arguments: args, Outcome: string(bt.ReplayApproved)})
	if err != nil {
		return nil, err
	}
	return s.claimAndExecute(ctx, req, by)
}

// rejudge compares the judgement a request was recorded (or last approved) with to pf, its
// preflight against the job as it is now, and returns what now asks for more: a higher risk
// level, other code, more targets in scope, a compensation reference the request lacks, or a
// second person's approval it does not have. decided is whether an identity other than the
// requester approves it (or has approved it). Nothing returned: the judgement stands.
func rejudge(req *bt.ReplayRequest, pf *bt.Preflight, decided bool) []string {
	was := req.Preflight
	var out []string
	if riskRank(pf.RiskLevel) > riskRank(was.RiskLevel) {
		out = append(out, fmt.Sprintf("the job's risk rose from %s to %s", riskWord(was.RiskLevel), riskWord(pf.RiskLevel)))
	}
	if pf.CurrentJobVersion != was.CurrentJobVersion {
		out = append(out, fmt.Sprintf("the job's code changed from version %q to %q", was.CurrentJobVersion, pf.CurrentJobVersion))
	}
	if pf.TargetsInScope > was.TargetsInScope {
		out = append(out, fmt.Sprintf("its scope grew from %d to %d target(s)", was.TargetsInScope, pf.TargetsInScope))
	}
	if pf.RiskLevel == bt.RiskHigh && (req.CompensationRef == nil || *req.CompensationRef == "") {
		out = append(out, "a HIGH-risk "+kindWord(req)+" needs a compensation reference, which this request lacks: reject it and request it again with one")
	}
	if pf.RequiresApproval && !decided {
		out = append(out, "it now needs a second person's approval ("+strings.Join(pf.ApprovalReasons, "; ")+")")
	}
	return out
}

func riskRank(r bt.RiskLevel) int {
	switch r {
	case bt.RiskHigh:
		return 3
	case bt.RiskMedium:
		return 2
	case bt.RiskLow:
		return 1
	}
	return 0
}

func riskWord(r bt.RiskLevel) string {
	if r == "" {
		return "unset"
	}
	return string(r)
}

// reopen moves a request whose judgement changed back to PENDING_APPROVAL, its decision
// dropped, its fresh preflight and the reason stored, and returns it with APPROVAL_REQUIRED:
// nothing starts until a second person approves it as it is now.
func reopen(ctx context.Context, s *Service, cur *bt.ReplayRequest, from bt.ReplayStatus, pf *bt.Preflight, changed []string,
	by Actor, action string, args map[string]any) (*bt.ReplayRequest, error) {
	reason := "judged again at " + strings.TrimSuffix(action, "Replay") + ": " + strings.Join(changed, "; ")
	out, err := s.cfg.Store.DecideReplay(ctx, cur.ID, store.ReplayDecision{From: from, To: bt.ReplayPendingApproval, Preflight: pf, Reopen: &reason},
		store.AuditRecord{Actor: by.name(), Action: action, Arguments: args, Outcome: string(bt.CodeApprovalRequired)})
	if err != nil {
		return nil, err
	}
	return out, &bt.Error{Code: bt.CodeApprovalRequired, Message: fmt.Sprintf(
		"%s %d is PENDING_APPROVAL again, nothing started: %s", kindWord(cur), cur.ID, reason)}
}

// requestPreflight computes a request's preflight again. A RESTART request is blocked once
// the job's current generation is no longer the one it was requested for: it was approved
// for what that generation held.
func (s *Service) requestPreflight(ctx context.Context, req *bt.ReplayRequest) (*bt.Preflight, error) {
	if req.Kind != bt.KindRestart {
		return s.PreflightOf(ctx, req.SourceRunID, req.Scope, req.TargetKeys)
	}
	pf, err := s.RestartPreflight(ctx, req.JobName)
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

// ClaimLapse is how long an execute's claim on a request holds: a claimer that went away
// (its instance died between claim and start) loses it after this, and another execute may
// take it. It is longer than any start takes, a hand-off's wait included.
const ClaimLapse = 2 * time.Minute

// Execute starts the run of an APPROVED request whose run could not start when it was
// approved (no free slot, the job paused, another run active). The approval stands, so any
// caller allowed to execute may (the API gives it to approvers), the requester too. The
// request is claimed first: a second execute while the claim holds is CONFLICT, and only the
// claim's holder can insert the run, which marks the request EXECUTED in the same
// transaction. While the job has an active run it is ALREADY_RUNNING and the request stays
// APPROVED. Otherwise it is judged again against the job as it is now: a request that has
// become blocked is marked BLOCKED, REPLAY_BLOCKED returned beside it; one that asks for more
// than it was approved for (see rejudge) goes back to PENDING_APPROVAL with the reason,
// APPROVAL_REQUIRED returned beside it, and nothing starts.
func (s *Service) Execute(ctx context.Context, requestID int64, by Actor) (req *bt.ReplayRequest, err error) {
	defer func() {
		if err != nil && req == nil {
			s.cfg.AuditFunc(ctx, by.Name, "executeReplay", fmt.Sprintf("replay:%d", requestID), nil, err)
		}
	}()
	cur, err := s.cfg.Store.ReplayRequest(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if cur.Status != bt.ReplayApproved {
		return nil, bt.Errorf(bt.CodeConflict, "replay request %d is %s, not APPROVED", requestID, cur.Status)
	}
	if cur.Kind == bt.KindSchedule {
		return scheduleDecisions{s}.apply(ctx, cur, by)
	}
	token := newClaimToken()
	if cur, err = s.cfg.Store.ClaimReplay(ctx, requestID, token, ClaimLapse); err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			release(ctx, s.cfg, requestID, token)
		}
	}()
	if active, err := s.cfg.Store.ActiveRun(ctx, cur.JobName); err != nil {
		return nil, err
	} else if active != nil {
		return nil, bt.Errorf(bt.CodeAlreadyRunning, "job %q has an active run (%d): execute the request once it ends", cur.JobName, active.ID)
	}
	pf, err := s.requestPreflight(ctx, cur)
	if err != nil {
		return nil, err
	}
	if pf.Blocked {
		name := by.name()
		out, err := s.cfg.Store.DecideReplay(ctx, requestID, store.ReplayDecision{From: bt.ReplayApproved, To: bt.ReplayBlocked, Preflight: pf},
			store.AuditRecord{Actor: name, Action: "executeReplay", Outcome: string(bt.ReplayBlocked)})
		if err != nil {
			return nil, err
		}
		return out, &bt.Error{Code: bt.CodeReplayBlocked, Message: kindWord(cur) + " blocked since it was approved: " + strings.Join(pf.BlockingReasons, "; ")}
	}
	if changed := rejudge(cur, pf, decidedByOther(cur)); len(changed) > 0 {
		return reopen(ctx, s, cur, bt.ReplayApproved, pf, changed, by, "executeReplay", nil)
	}
	started = true // execute releases the claim of a start that fails
	return s.execute(ctx, cur, token, by)
}

// decidedByOther reports whether an identity other than the requester decided req.
func decidedByOther(req *bt.ReplayRequest) bool {
	if req.DecidedBy == nil {
		return false
	}
	return !isRequester(req, Actor{Name: *req.DecidedBy, TokenID: derefID(req.DecidedByTokenID)})
}

func derefID(id *int64) int64 {
	if id == nil {
		return 0
	}
	return *id
}

// claimAndExecute claims an APPROVED request just recorded or approved, and starts its run.
func (s *Service) claimAndExecute(ctx context.Context, req *bt.ReplayRequest, by Actor) (*bt.ReplayRequest, error) {
	token := newClaimToken()
	claimed, err := s.cfg.Store.ClaimReplay(ctx, req.ID, token, ClaimLapse)
	if err != nil {
		return req, err
	}
	return s.execute(ctx, claimed, token, by)
}

// release gives up a claim whose start did not happen; the request stays APPROVED.
func release(ctx context.Context, cfg Config, id int64, token string) {
	if err := cfg.Store.ReleaseReplayClaim(context.WithoutCancel(ctx), id, token); err != nil {
		cfg.Logger.Warn("release the claim on a request; it lapses by itself", "request", id, "err", err)
	}
}

// execute starts the run of an APPROVED request claimed with token: a REPLAY of its
// generation, or a RESTART (past the gate, which the approval answered). The run's insert
// marks the request EXECUTED. A start that fails releases the claim and returns the request,
// still APPROVED, with the error.
//
// The run is requested by the request's requester: the approver decided (decidedBy), the
// requester asked. by, who executes, is audited.
func (s *Service) execute(ctx context.Context, req *bt.ReplayRequest, token string, by Actor) (*bt.ReplayRequest, error) {
	id, actor := req.ID, by.name()
	target := fmt.Sprintf("replay:%d", id)
	run, err := s.cfg.StartFunc(ctx, StartRequest{Job: req.JobName, Actor: NameOr(req.RequestedBy), RequestID: id, Claim: token,
		Restart: req.Kind == bt.KindRestart, Generation: req.Generation, Scope: req.Scope, Targets: req.TargetKeys})
	if err == nil && run == nil {
		err = fmt.Errorf("the start of request %d made no run", id)
	}
	if err != nil {
		release(ctx, s.cfg, id, token)
		if cur, gerr := s.cfg.Store.ReplayRequest(context.WithoutCancel(ctx), id); gerr == nil {
			if cur.Status == bt.ReplayExecuted && cur.ReplayRunID != nil {
				// The run was inserted (on a worker whose answer was lost): the request is done.
				auditExecuted(ctx, s.cfg, actor, target, *cur.ReplayRunID)
				return cur, nil
			}
			req = cur
		}
		s.cfg.AuditFunc(ctx, actor, "executeReplay", target, nil, err)
		var be *bt.Error
		if errors.As(err, &be) { // the code stays the start's; the message says what is left to do
			return req, &bt.Error{Code: be.Code, Field: be.Field, Message: fmt.Sprintf(
				"%s %d is approved but its run did not start: %s. It stays APPROVED: run it with executeReplay once that is cleared", kindWord(req), id, be.Message)}
		}
		return req, fmt.Errorf("%s %d approved but its run did not start (execute it again with executeReplay): %w", kindWord(req), id, err)
	}
	auditExecuted(ctx, s.cfg, actor, target, run.ID)
	// The run has started: the caller going away now must not hide that.
	return s.cfg.Store.ReplayRequest(context.WithoutCancel(ctx), id)
}

// auditExecuted records the execute of a request whose run's insert marked it EXECUTED.
func auditExecuted(ctx context.Context, cfg Config, actor, target string, runID int64) {
	if err := cfg.Store.Audit(context.WithoutCancel(ctx), store.AuditRecord{Actor: actor, Action: "executeReplay", Target: target,
		Arguments: map[string]any{"runId": runID}, Outcome: string(bt.ReplayExecuted)}); err != nil {
		cfg.Logger.Error("write audit row", "action", "executeReplay", "err", err)
	}
}

func newClaimToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Reject rejects a PENDING_APPROVAL request. As with approval, the decider must be
// another identity than the requester (SELF_APPROVAL): a request is decided by a second
// person either way.
func (s *Service) Reject(ctx context.Context, requestID int64, by Actor, note string) (req *bt.ReplayRequest, err error) {
	target := fmt.Sprintf("replay:%d", requestID)
	defer func() {
		if err != nil {
			s.cfg.AuditFunc(ctx, by.Name, "rejectReplay", target, map[string]any{"note": note}, err)
		}
	}()
	cur, err := s.cfg.Store.ReplayRequest(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if cur.Status == bt.ReplayPendingApproval && isRequester(cur, by) {
		return nil, bt.Errorf(bt.CodeSelfApproval, "%s requested this %s and cannot reject it: a second person decides", cur.RequestedBy, kindWord(cur))
	}
	name, n := by.name(), note
	return s.cfg.Store.DecideReplay(ctx, requestID, store.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayRejected,
		DecidedBy: &name, DecidedByTokenID: by.tokenID(), Note: &n},
		store.AuditRecord{Actor: name, Action: "rejectReplay", Arguments: map[string]any{"requestId": requestID, "note": note}, Outcome: string(bt.ReplayRejected)})
}

// List lists replay requests, newest first, by keyset on id.
func (s *Service) List(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error) {
	if limit <= 0 {
		limit = 20
	}
	return s.cfg.Store.ReplayRequests(ctx, statuses, beforeID, limit)
}

// Get returns one replay request, or NOT_FOUND.
func (s *Service) Get(ctx context.Context, id int64) (*bt.ReplayRequest, error) {
	return s.cfg.Store.ReplayRequest(ctx, id)
}
