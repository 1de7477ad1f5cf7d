package runner

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/replay"
)

// Actor is who calls an operation: the name recorded in runs and the audit log, and the
// api_tokens id of the token the call came with. TokenID 0 is code calling without a token (a
// tool or test linked with the runner): such a caller is known by its name alone.
type Actor = replay.Actor

// ReplayParams is a replay request.
type ReplayParams = replay.ReplayParams

// RestartParams is a request to RESTART a job whose RESTART the gate holds (see Start): a
// HIGH-risk job, or one whose current generation holds targets in doubt.
type RestartParams = replay.RestartParams

// Preflight computes what replaying scope of a run's generation would do and whether it may:
// counts by state (from counters), the last checkpoint's age, the downstream error rate over
// five minutes, whether the job's code changed since the run, whether approval is needed, and
// every check with its value and verdict.
func (s *ReplayService) Preflight(ctx context.Context, runID int64, scope bt.ReplayScope) (*bt.Preflight, error) {
	return s.r.replays.Preflight(ctx, runID, scope)
}

// PreflightOf is Preflight for a replay of only the selected targets of scope (nil: all of
// them): TargetsInScope counts the selected targets the scope retries, and it is blocked when
// none is.
func (s *ReplayService) PreflightOf(ctx context.Context, runID int64, scope bt.ReplayScope, targets []string) (*bt.Preflight, error) {
	if targets != nil {
		var err error
		if targets, err = replay.CheckTargets(targets); err != nil {
			return nil, err
		}
	}
	return s.r.replays.PreflightOf(ctx, runID, scope, targets)
}

// RestartPreflight computes what a RESTART of job would do and whether it may: the counts of
// its current generation (whose targets a new generation calls again under new keys), targets
// in doubt (they block), an active run (blocks), the stop conditions over the last five
// minutes, and approval for a HIGH-risk job. It returns nil and no error for a job that has
// never run.
func (s *ReplayService) RestartPreflight(ctx context.Context, job string) (*bt.Preflight, error) {
	return s.r.replays.RestartPreflight(ctx, job)
}

// Request records a replay request with its preflight. It comes back BLOCKED (with the
// blocking reasons; REPLAY_BLOCKED is returned beside it), PENDING_APPROVAL, or — when no
// approval is needed — EXECUTED with the replay run started on this instance. A HIGH-risk
// request without a compensation reference is refused with APPROVAL_REQUIRED and not recorded.
func (s *ReplayService) Request(ctx context.Context, p ReplayParams) (*bt.ReplayRequest, error) {
	return s.r.replays.Request(ctx, p)
}

// RequestRestart records a request to RESTART a job, of kind RESTART and scope FULL, with the
// RESTART preflight of the job's current generation. It follows the replay lifecycle: BLOCKED
// (REPLAY_BLOCKED returned beside it) while targets are in doubt, PENDING_APPROVAL for a
// HIGH-risk job (which needs a compensation reference, or APPROVAL_REQUIRED and nothing is
// recorded), or EXECUTED at once with its RESTART run started when nothing calls for approval.
// Once approved by another identity (Approve), the request starts a RESTART run: a new
// generation. A job that has never run is INVALID_INPUT: its RESTART repeats nothing and is
// not gated.
func (s *ReplayService) RequestRestart(ctx context.Context, p RestartParams) (*bt.ReplayRequest, error) {
	return s.r.replays.RequestRestart(ctx, p)
}

// Approve approves a PENDING_APPROVAL request (a replay, or a RESTART) and starts its run; the
// request becomes EXECUTED. The approver must be another identity than the requester
// (SELF_APPROVAL; see Actor). The preflight is computed again: a request that has become
// blocked is marked BLOCKED instead, REPLAY_BLOCKED returned beside it. A request whose run
// could not start stays APPROVED, the error returned: Execute starts it later.
func (s *ReplayService) Approve(ctx context.Context, requestID int64, by Actor, note string) (*bt.ReplayRequest, error) {
	return s.r.replays.Approve(ctx, requestID, by, note)
}

// Execute starts the run of an APPROVED request whose run could not start when it was
// approved (no free slot, the job paused, another run active). The approval stands, so any
// caller allowed to execute may (the API gives it to approvers), the requester too. While the
// job has an active run it is ALREADY_RUNNING and the request stays APPROVED; otherwise the
// preflight is computed again, and a request that has become blocked is marked BLOCKED,
// REPLAY_BLOCKED returned beside it.
func (s *ReplayService) Execute(ctx context.Context, requestID int64, by Actor) (*bt.ReplayRequest, error) {
	return s.r.replays.Execute(ctx, requestID, by)
}

// Reject rejects a PENDING_APPROVAL request. As with approval, the decider must be another
// identity than the requester (SELF_APPROVAL): a request is decided by a second person either
// way.
func (s *ReplayService) Reject(ctx context.Context, requestID int64, by Actor, note string) (*bt.ReplayRequest, error) {
	return s.r.replays.Reject(ctx, requestID, by, note)
}

// List lists replay requests, newest first, by keyset on id.
func (s *ReplayService) List(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error) {
	return s.r.replays.List(ctx, statuses, beforeID, limit)
}

// Get returns one replay request, or NOT_FOUND.
func (s *ReplayService) Get(ctx context.Context, id int64) (*bt.ReplayRequest, error) {
	return s.r.replays.Get(ctx, id)
}

// startReplay starts the run of an executed request: a REPLAY of its generation, or a RESTART
// past the gate, which the approval answered.
func (r *Runner) startReplay(ctx context.Context, q replay.StartRequest) (*RunRecord, error) {
	id := q.RequestID
	p := StartParams{Job: q.Job, Trigger: bt.TriggerReplay, Mode: bt.ModeResume, Actor: q.Actor,
		Generation: q.Generation, FromStart: true, ReplayRequestID: &id, ReplayScope: q.Scope, ReplayTargets: q.Targets,
		requestClaim: q.Claim}
	if q.Restart {
		p = StartParams{Job: q.Job, Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: q.Actor,
			ReplayRequestID: &id, approvedRestart: true, noAudit: true, requestClaim: q.Claim}
	}
	return r.Start(ctx, p)
}
