package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/replay"
	"github.com/baton-run/baton/runner/internal/schedule"
	"github.com/baton-run/baton/runner/store"
)

// Cancel asks an active run to stop at its next item boundary. Committed items stay; the run
// ends CANCELLED. The worker holding the run may be on any instance.
func (s *RunService) Cancel(ctx context.Context, runID int64, actor string) (*bt.RunRecord, error) {
	r := s.r
	run, err := s.requestCancel(ctx, runID, actorOr(actor))
	r.audit(ctx, actor, "cancelRun", fmt.Sprintf("run:%d", runID), nil, err)
	return run, err
}

// requestCancel sets a run's cancel flag. A sharded run none of whose shards an instance
// holds ends at once: its final event goes out from here.
func (s *RunService) requestCancel(ctx context.Context, runID int64, actor string) (*bt.RunRecord, error) {
	r := s.r
	run, err := r.store.RequestCancel(ctx, runID, actor)
	if err == nil && run.ShardTotal > 0 && !run.Status.Open() && r.cfg.Events != nil {
		r.cfg.Events.RunChanged(RunEvent{Run: *run, Final: true})
	}
	return run, err
}

// ScheduleUpdate changes a job's schedule; nil fields stay as they are.
type ScheduleUpdate struct {
	Cron     *string
	Timezone *string
	Enabled  *bool
	// Lease overrides the job's lease; 0 clears the override.
	Lease *time.Duration
	Actor string
	// ActorTokenID is the api_tokens id of who asks; 0 for code.
	ActorTokenID int64
	// Reason says why, for the SCHEDULE request a change on a HIGH-risk job becomes.
	Reason string
}

// ScheduleRequestedError is UpdateSchedule's answer to a change that can make a HIGH-risk job
// fire: nothing changed, the change was recorded as Request (kind SCHEDULE, PENDING_APPROVAL),
// and applies once another identity approves it. Its code is APPROVAL_REQUIRED.
type ScheduleRequestedError struct {
	Request *bt.ReplayRequest
	Err     *bt.Error
}

func (e *ScheduleRequestedError) Error() string { return e.Err.Error() }
func (e *ScheduleRequestedError) Unwrap() error { return e.Err }

// UpdateSchedule validates and applies u. The change reaches every scheduler at once; an
// invalid cron or timezone is refused with INVALID_CRON / INVALID_TIMEZONE and nothing is
// written. On a HIGH-risk job a change that can make the schedule fire (a cron set or changed,
// a timezone changed, the schedule enabled, the result a cron that is enabled) is not applied:
// it becomes a SCHEDULE request, returned in a *ScheduleRequestedError (APPROVAL_REQUIRED),
// which another identity approves with ReplayService.Approve (ADR 22).
func (s *JobService) UpdateSchedule(ctx context.Context, job string, u ScheduleUpdate) (*bt.JobSettings, error) {
	return s.updateSchedule(ctx, job, u, false)
}

// applyApprovedSchedule applies the change of an approved SCHEDULE request.
func (s *JobService) applyApprovedSchedule(ctx context.Context, job string, c bt.ScheduleChange, actor string) error {
	u := ScheduleUpdate{Cron: c.Cron, Timezone: c.Timezone, Enabled: c.Enabled, Actor: actor}
	if c.LeaseSeconds != nil {
		d := time.Duration(*c.LeaseSeconds) * time.Second
		u.Lease = &d
	}
	_, err := s.updateSchedule(ctx, job, u, true)
	return err
}

// makesFires reports whether u, applied to cur, can make the schedule fire where it could
// not, or fire otherwise: the result is an enabled cron, and the cron, the timezone or enabled
// changes.
func makesFires(cur *bt.JobSettings, u ScheduleUpdate) bool {
	spec, tz, on := cur.Cron, cur.Timezone, cur.Enabled
	if u.Cron != nil {
		spec = strings.TrimSpace(*u.Cron)
	}
	if u.Timezone != nil {
		tz = *u.Timezone
	}
	if u.Enabled != nil {
		on = *u.Enabled
	}
	if spec == "" || !on {
		return false
	}
	return spec != cur.Cron || tz != cur.Timezone || !cur.Enabled
}

func (s *JobService) updateSchedule(ctx context.Context, job string, u ScheduleUpdate, approved bool) (j *bt.JobSettings, err error) {
	r := s.r
	defer func() {
		args := map[string]any{}
		if u.Cron != nil {
			args["cron"] = *u.Cron
		}
		if u.Timezone != nil {
			args["timezone"] = *u.Timezone
		}
		if u.Enabled != nil {
			args["enabled"] = *u.Enabled
		}
		if u.Lease != nil {
			args["leaseSeconds"] = u.Lease.Seconds()
		}
		r.audit(ctx, u.Actor, "updateJobSchedule", "job:"+job, args, err)
	}()
	cur, err := r.store.Job(ctx, job)
	if err != nil {
		return nil, err
	}
	spec, tz := cur.Cron, cur.Timezone
	if u.Cron != nil {
		spec = *u.Cron
	}
	if u.Timezone != nil {
		tz = *u.Timezone
	}
	if _, err := schedule.LoadLocation(tz); err != nil {
		return nil, err
	}
	if spec != "" {
		if _, err := ParseSchedule(spec, tz); err != nil {
			return nil, err
		}
	}
	p := store.SchedulePatch{Cron: u.Cron, Timezone: u.Timezone, Enabled: u.Enabled, Actor: actorOr(u.Actor)}
	if u.Lease != nil {
		if *u.Lease < 0 || *u.Lease > 24*time.Hour {
			return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: "lease must be between 1s and 24h (0 clears the override)", Field: "leaseSeconds"}
		}
		secs := 0
		if *u.Lease > 0 {
			secs = leaseSecondsFor(*u.Lease)
		}
		p.LeaseSeconds = &secs
	}
	if !approved && cur.RiskLevel == bt.RiskHigh && makesFires(cur, u) {
		req, err := r.replays.RequestSchedule(ctx, replay.ScheduleParams{Job: job, Reason: u.Reason, Actor: u.Actor, ActorTokenID: u.ActorTokenID,
			Change: bt.ScheduleChange{Cron: u.Cron, Timezone: u.Timezone, Enabled: u.Enabled, LeaseSeconds: p.LeaseSeconds}})
		if err != nil {
			return nil, err
		}
		return nil, &ScheduleRequestedError{Request: req, Err: &bt.Error{Code: bt.CodeApprovalRequired, Field: "cron", Message: fmt.Sprintf(
			"%s is HIGH risk: a schedule change that makes it fire needs a second person's approval. Nothing changed yet: it was recorded as schedule request %d, "+
				"which an approver approves in the Replays queue (approveReplay; baton replays approve %d); it applies then", job, req.ID, req.ID)}}
	}
	j, err = r.store.UpdateSchedule(ctx, job, p)
	if err == nil {
		r.sched.Wake()
	}
	return j, err
}

// actorOr returns a, or "system" for no one.
func actorOr(a string) string { return replay.NameOr(a) }

// NextFires returns the next n fire times of spec in tz after the database's now.
func (s *JobService) NextFires(ctx context.Context, spec, tz string, n int) ([]time.Time, error) {
	r := s.r
	sched, err := ParseSchedule(spec, tz)
	if err != nil {
		return nil, err
	}
	now, err := r.store.Now(ctx)
	if err != nil {
		return nil, err
	}
	return sched.NextN(now, n), nil
}

// Pause disables a job's schedule and asks its active run, wherever it runs, to stop at
// the next boundary with status PAUSED (checkpoint kept, lock released).
func (s *JobService) Pause(ctx context.Context, job, actor string) (*bt.JobSettings, error) {
	r := s.r
	j, err := r.store.SetPaused(ctx, job, true, actorOr(actor))
	r.audit(ctx, actor, "pauseJob", "job:"+job, nil, err)
	return j, err
}

// Resume re-enables a paused job and, if its last run ended PAUSED, starts a RESUME run on
// this instance that continues from the checkpoint. It returns the run it started, as Start
// does (nil if none).
func (s *JobService) Resume(ctx context.Context, job, actor string) (j *bt.JobSettings, run *RunRecord, err error) {
	r := s.r
	defer func() { r.audit(ctx, actor, "resumeJob", "job:"+job, map[string]any{"runId": runIDOf(run)}, err) }()
	j, err = r.store.SetPaused(ctx, job, false, actorOr(actor))
	if err != nil {
		return nil, nil, err
	}
	last, err := r.store.LastRun(ctx, job)
	if err != nil || last == nil || last.Status != bt.StatusPaused {
		return j, nil, err
	}
	run, err = r.Start(ctx, StartParams{Job: job, Mode: bt.ModeResume, Actor: actorOr(actor), noAudit: true})
	if err != nil {
		return j, nil, fmt.Errorf("job %q resumed, but its run could not start: %w", job, err)
	}
	return j, run, nil
}
