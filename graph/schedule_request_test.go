package graph_test

import (
	"strings"
	"testing"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// An operator alone cannot make a HIGH-risk job's schedule fire: updateJobSchedule answers
// APPROVAL_REQUIRED with the SCHEDULE request it recorded and changes nothing; the requester
// cannot approve it; another token's approval applies it. A LOW-risk job's cron applies at once.
func TestHighRiskScheduleIsNotChangedByOnePerson(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "settlement", n: 1, risk: bt.RiskHigh}, &gatedJob{name: "digest", n: 1}}})
	op, op2, approver := b.token(model.RoleOperator), b.token(model.RoleApprover), b.token(model.RoleApprover)
	i.waitRunStatus(t, op, i.startJob(t, op, "settlement"), "SUCCEEDED")

	type payload struct {
		Job             *struct{ Cron string }
		ScheduleRequest *struct {
			ID, Kind, Status, RequestedBy, Reason string
			ScheduleChange                        *struct {
				Cron    *string
				Enabled *bool
			}
		}
		UserErrors []userError
	}
	update := func(token string, in map[string]any) payload {
		t.Helper()
		var data struct{ UpdateJobSchedule payload }
		i.post(t, token, `mutation($in: UpdateJobScheduleInput!) { updateJobSchedule(input: $in) { job { cron }
			scheduleRequest { id kind status requestedBy reason scheduleChange { cron enabled } } userErrors { code message field } } }`,
			map[string]any{"in": in}).decode(t, &data)
		return data.UpdateJobSchedule
	}
	cron := func() string {
		t.Helper()
		var data struct{ Job struct{ Cron string } }
		i.post(t, op, `{ job(name: "settlement") { cron } }`, nil).decode(t, &data)
		return data.Job.Cron
	}

	got := update(op, map[string]any{"name": "settlement", "cron": "* * * * *", "enabled": true, "reason": "settle every minute"})
	req := got.ScheduleRequest
	if got.Job != nil || !oneCode(got.UserErrors, "APPROVAL_REQUIRED") || !strings.Contains(got.UserErrors[0].Message, "second person") ||
		req == nil || req.Kind != "SCHEDULE" || req.Status != "PENDING_APPROVAL" || req.RequestedBy != b.tokenName(op) ||
		req.Reason != "settle every minute" || req.ScheduleChange == nil || req.ScheduleChange.Cron == nil || *req.ScheduleChange.Cron != "* * * * *" {
		t.Fatalf("cron on a HIGH-risk job by an operator: %+v", got)
	}
	if c := cron(); c != "" {
		t.Fatalf("the cron changed before approval: %q", c)
	}
	// The operator may not approve at all; an approver may not approve their own request.
	if r := i.post(t, op, `mutation($id: ID!) { approveReplay(input: {requestId: $id}) { userErrors { code } } }`,
		map[string]any{"id": req.ID}); r.code() != "FORBIDDEN" {
		t.Fatalf("approval by the operator who asked: %q, want FORBIDDEN", r.code())
	}
	mine := update(op2, map[string]any{"name": "settlement", "cron": "*/5 * * * *"})
	if mine.ScheduleRequest == nil || !oneCode(mine.UserErrors, "APPROVAL_REQUIRED") {
		t.Fatalf("cron by an approver: %+v", mine)
	}
	if _, ues := i.decide(t, op2, "approveReplay", mine.ScheduleRequest.ID); !oneCode(ues, "SELF_APPROVAL") {
		t.Fatalf("approval by the requester's token: %+v", ues)
	}
	if c := cron(); c != "" {
		t.Fatalf("the cron changed without a second person: %q", c)
	}

	done, ues := i.decide(t, approver, "approveReplay", req.ID)
	if len(ues) != 0 || done == nil || done.Status != "EXECUTED" || done.Kind != "SCHEDULE" || done.ReplayRun != nil ||
		done.DecidedBy == nil || *done.DecidedBy != b.tokenName(approver) {
		t.Fatalf("approval by another token: %+v %+v", done, ues)
	}
	if c := cron(); c != "* * * * *" {
		t.Fatalf("after approval the cron is %q, want * * * * *", c)
	}

	if low := update(op, map[string]any{"name": "digest", "cron": "* * * * *"}); len(low.UserErrors) != 0 || low.Job == nil || low.Job.Cron != "* * * * *" {
		t.Fatalf("cron on a LOW-risk job: %+v", low)
	}
}
