package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/pipeline"
	"github.com/baton-run/baton/runner/store"
)

// Auto-resume (ADR 12). A run that ends FAILED because its holder died (the recoverer ended it:
// LEASE_EXPIRED), its instance shut down mid-run (SHUTDOWN, SHUTDOWN_TIMEOUT) or its database
// went away (DATABASE_UNAVAILABLE) is, when the job's policy covers that way, given a due time
// in the same statement that ends it. Every scheduler instance with a free slot looks for the
// due ones on each pass and starts a RESUME run (trigger AUTO_RESUME) for each; the insert
// claims the ended run in its transaction, so one ended run is continued once, whoever tries.

type (
	// AutoResumePolicy says when a run that ended without finishing continues by itself.
	AutoResumePolicy = bt.AutoResumePolicy
	// ResumeCause is a way of ending that auto-resume may cover.
	ResumeCause = bt.ResumeCause
)

// Resume causes, re-exported.
const (
	ResumeLeaseExpired = bt.ResumeLeaseExpired
	ResumeShutdown     = bt.ResumeShutdown
	ResumeDatabase     = bt.ResumeDatabase
	TriggerAutoResume  = bt.TriggerAutoResume
)

// DefaultAutoResume is the policy of a job that declares none: on, for every cause, 3
// attempts, 5 s backoff doubling per attempt. It is on for HIGH-risk jobs too: a resume skips
// CONFIRMED targets and leaves AMBIGUOUS_EFFECT ones quarantined, so it repeats no effect.
func DefaultAutoResume() AutoResumePolicy {
	return AutoResumePolicy{Enabled: true, MaxAttempts: 3, Backoff: 5 * time.Second, On: slices.Clone(bt.ResumeCauses)}
}

// autoResumeActor is who AUTO_RESUME runs say requested them.
const autoResumeActor = "auto-resume"

// autoResumeBatch bounds the due auto-resumes one scheduler pass starts.
const autoResumeBatch = 100

// validatePolicy refuses a policy the database would not hold, naming the field.
func validatePolicy(p AutoResumePolicy) error {
	if p.MaxAttempts < 1 || p.MaxAttempts > 100 {
		return &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("auto-resume max attempts must be 1 to 100, not %d", p.MaxAttempts), Field: "maxAttempts"}
	}
	if p.Backoff < 0 || p.Backoff > 24*time.Hour || p.Backoff%time.Second != 0 {
		return &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("auto-resume backoff must be whole seconds from 0 to 24h, not %s", p.Backoff), Field: "backoffSeconds"}
	}
	seen := map[ResumeCause]bool{}
	for _, c := range p.On {
		if !slices.Contains(bt.ResumeCauses, c) {
			return &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("auto-resume cause %q is not one of %v", c, bt.ResumeCauses), Field: "on"}
		}
		if seen[c] {
			return &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("auto-resume cause %q is listed twice", c), Field: "on"}
		}
		seen[c] = true
	}
	return nil
}

// policyOf is the job's declared policy, or the default.
func policyOf(info JobInfo) AutoResumePolicy {
	if info.AutoResume == nil {
		return DefaultAutoResume()
	}
	return *info.AutoResume
}

// AutoResumeUpdate changes a job's auto-resume policy; nil fields stay as they are.
type AutoResumeUpdate struct {
	Enabled     *bool
	MaxAttempts *int
	Backoff     *time.Duration
	On          []ResumeCause // nil: unchanged; empty: no cause (as good as off)
	Actor       string
}

// SetAutoResume validates and applies u to the job's auto-resume policy, audited as
// updateJobAutoResume. It governs the runs that end from now on; an ended run already waiting
// for its resume keeps its due time. Invalid values are INVALID_INPUT and nothing is written.
func (s *JobService) SetAutoResume(ctx context.Context, job string, u AutoResumeUpdate) (j *bt.JobSettings, err error) {
	r := s.r
	defer func() {
		args := map[string]any{}
		if u.Enabled != nil {
			args["enabled"] = *u.Enabled
		}
		if u.MaxAttempts != nil {
			args["maxAttempts"] = *u.MaxAttempts
		}
		if u.Backoff != nil {
			args["backoffSeconds"] = u.Backoff.Seconds()
		}
		if u.On != nil {
			args["on"] = u.On
		}
		r.audit(ctx, u.Actor, "updateJobAutoResume", "job:"+job, args, err)
	}()
	cur, err := r.store.Job(ctx, job)
	if err != nil {
		return nil, err
	}
	next := cur.AutoResume
	if u.Enabled != nil {
		next.Enabled = *u.Enabled
	}
	if u.MaxAttempts != nil {
		next.MaxAttempts = *u.MaxAttempts
	}
	if u.Backoff != nil {
		next.Backoff = *u.Backoff
	}
	if u.On != nil {
		next.On = u.On
	}
	if err := validatePolicy(next); err != nil {
		return nil, err
	}
	return r.store.SetAutoResume(ctx, job, store.AutoResumePatch{Enabled: u.Enabled, MaxAttempts: u.MaxAttempts,
		Backoff: u.Backoff, On: u.On, Actor: actorOr(u.Actor)})
}

// resumeDue starts the due auto-resumes of this instance's jobs and returns how long until the
// next one not yet due is (by the database clock), or -1 for none. A due one left unstarted
// (another instance's job, no free slot here) is looked at again on the next pass: the poll,
// a slot freed, a wake-up. An instance with no worker slot leaves them all to the others (a
// start it handed over could not claim the run).
func (r *Runner) resumeDue(ctx context.Context) time.Duration {
	if cap(r.slots) == 0 || r.draining.Load() {
		return -1
	}
	due, next, err := r.store.DueAutoResumes(ctx, autoResumeBatch)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("read due auto-resumes", "err", err)
		}
		return -1
	}
	for _, d := range due {
		if _, ok := r.Job(d.JobName); !ok {
			continue // another instance's job
		}
		// The resume continues the ended run's trace: its span is a child of that run's.
		run, err := r.Start(pipeline.WithTraceParent(ctx, d.TraceParent), StartParams{Job: d.JobName, Trigger: bt.TriggerAutoResume,
			Mode: bt.ModeResume, Actor: autoResumeActor, local: true, autoResumeOf: d.RunID})
		switch {
		case err == nil && run != nil:
			r.metrics.AutoResumed.Inc()
			args := []any{"job", d.JobName, "of", d.RunID, "run_id", run.ID, "attempt", d.Attempt + 1}
			if id := traceIDOf(run.TraceParent); id != "" {
				args = append(args, "trace_id", id)
			}
			r.log.Info("run auto-resumed", args...)
		case err == nil, errors.Is(err, bt.ErrAlreadyRunning):
			// Claimed by another instance, or another run is active: it supersedes this one.
		case errors.Is(err, bt.ErrCapacityExceeded):
			r.sched.WantSlot()
		default:
			if ctx.Err() == nil {
				r.log.Warn("auto-resume did not start", "job", d.JobName, "of", d.RunID, "err", err)
			}
		}
	}
	if next == nil {
		return -1
	}
	return *next
}
