package replay

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// ScheduleParams is a change to a HIGH-risk job's schedule that can make it fire, asked for by
// Actor: a SCHEDULE request.
type ScheduleParams struct {
	Job    string
	Change bt.ScheduleChange
	// Reason is why; a request without one says "schedule change".
	Reason string
	Actor  string
	// ActorTokenID is the requester's api_tokens id; 0 for a request made by code.
	ActorTokenID int64
}

// RequestSchedule records a SCHEDULE request, PENDING_APPROVAL: each fire of the schedule
// starts a run nobody starts by hand (by default a RESTART, a new generation), so on a HIGH-risk
// job the change needs a second person, like a RESTART request. Its preflight is the job's
// RESTART preflight. Approve applies the change. A job that has never run has no generation to
// judge by and is refused with APPROVAL_REQUIRED, nothing recorded: start it once by hand first.
func (s *Service) RequestSchedule(ctx context.Context, p ScheduleParams) (*bt.ReplayRequest, error) {
	p.Reason = strings.TrimSpace(p.Reason)
	if p.Reason == "" {
		p.Reason = "schedule change"
	}
	if utf8.RuneCountInString(p.Reason) > 2000 {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "reason is longer than 2000 characters", Field: "reason"}
	}
	pf, err := s.RestartPreflight(ctx, p.Job)
	if err != nil {
		return nil, err
	}
	if pf == nil {
		return nil, &bt.Error{Code: bt.CodeApprovalRequired, Field: "cron", Message: fmt.Sprintf(
			"HIGH-risk job %s has never run: start it once by hand, then request its schedule (a change that makes it fire needs a second person's approval)", p.Job)}
	}
	pf.RequiresApproval = true
	pf.ApprovalReasons = append(pf.ApprovalReasons, fmt.Sprintf(
		"a schedule change that makes HIGH-risk job %s fire: each fire starts a run nobody starts by hand, so a second person approves it", p.Job))
	by := Actor{Name: p.Actor, TokenID: p.ActorTokenID}
	change := p.Change
	req := &bt.ReplayRequest{Kind: bt.KindSchedule, JobName: p.Job, SourceRunID: pf.RunID, Generation: pf.Generation,
		Scope: bt.ScopeFull, Preflight: *pf, Reason: p.Reason, Status: bt.ReplayPendingApproval, ScheduleChange: &change}
	req.RequestedBy, req.RequestedByTokenID = by.name(), by.tokenID()
	return s.cfg.Store.InsertReplay(ctx, req, store.AuditRecord{Actor: by.name(), Action: "requestSchedule",
		Arguments: scheduleArgs(p.Job, change), Outcome: string(bt.ReplayPendingApproval)})
}

func scheduleArgs(job string, c bt.ScheduleChange) map[string]any {
	args := map[string]any{"job": job}
	if c.Cron != nil {
		args["cron"] = *c.Cron
	}
	if c.Timezone != nil {
		args["timezone"] = *c.Timezone
	}
	if c.Enabled != nil {
		args["enabled"] = *c.Enabled
	}
	if c.LeaseSeconds != nil {
		args["leaseSeconds"] = *c.LeaseSeconds
	}
	return args
}

// scheduleDecisions decides SCHEDULE requests for a Service: Approve and Execute hand them
// here, since they start no run.
type scheduleDecisions struct{ s *Service }

// approve approves a PENDING_APPROVAL SCHEDULE request (its approver already checked to be
// another identity) and applies its change.
func (d scheduleDecisions) approve(ctx context.Context, cur *bt.ReplayRequest, by Actor, note string, args map[string]any) (*bt.ReplayRequest, error) {
	s := d.s
	name, n := by.name(), note
	req, err := s.cfg.Store.DecideReplay(ctx, cur.ID, store.ReplayDecision{From: bt.ReplayPendingApproval, To: bt.ReplayApproved,
		DecidedBy: &name, DecidedByTokenID: by.tokenID(), Note: &n},
		store.AuditRecord{Actor: name, Action: "approveReplay", Arguments: args, Outcome: string(bt.ReplayApproved)})
	if err != nil {
		return nil, err
	}
	return d.apply(ctx, req, by)
}

// apply applies an APPROVED SCHEDULE request's change, by its requester, and marks it
// EXECUTED. A change refused now (the cron no longer valid, the job gone) leaves it APPROVED,
// the error returned.
func (d scheduleDecisions) apply(ctx context.Context, req *bt.ReplayRequest, by Actor) (*bt.ReplayRequest, error) {
	s := d.s
	if req.ScheduleChange == nil || s.cfg.ScheduleFunc == nil {
		return req, bt.Errorf(bt.CodeConflict, "schedule request %d has no change to apply", req.ID)
	}
	if err := s.cfg.ScheduleFunc(ctx, req.JobName, *req.ScheduleChange, NameOr(req.RequestedBy)); err != nil {
		s.cfg.AuditFunc(ctx, by.name(), "executeReplay", fmt.Sprintf("replay:%d", req.ID), nil, err)
		return req, fmt.Errorf("schedule request %d is approved but its change was not applied; it stays APPROVED (executeReplay applies it): %w", req.ID, err)
	}
	return s.cfg.Store.DecideReplay(ctx, req.ID, store.ReplayDecision{From: bt.ReplayApproved, To: bt.ReplayExecuted},
		store.AuditRecord{Actor: by.name(), Action: "executeReplay", Arguments: scheduleArgs(req.JobName, *req.ScheduleChange), Outcome: string(bt.ReplayExecuted)})
}
