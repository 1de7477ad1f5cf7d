package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/connretry"
	"github.com/baton-run/baton/runner/internal/pipeline"
	"github.com/baton-run/baton/runner/store"
)

// StartParams says which job to start, why and how.
type StartParams struct {
	Job     string
	Trigger Trigger // default MANUAL
	Mode    Mode    // default RESUME
	Actor   string  // who asked; default "system"
	// Due and Next are set by the scheduler for SCHEDULED starts: the fire being claimed and
	// the one after it. Missed lists the fires between them that passed unclaimed; the
	// claimer records them as skipped.
	Due, Next time.Time
	Missed    []time.Time
	// Generation, FromStart and ReplayRequestID are set for REPLAY starts.
	Generation      int64
	FromStart       bool
	ReplayRequestID *int64
	// ReplayScope says which failed targets a REPLAY run retries.
	ReplayScope bt.ReplayScope
	// ReplayTargets narrows a REPLAY run to these targets of its scope; nil: all of them.
	ReplayTargets []string

	noAudit bool // set by operations that audit themselves
	// autoResumeOf is the ended run an AUTO_RESUME start continues (claimed by the insert).
	autoResumeOf int64
	local        bool // never hand this start to another instance
	// approvedRestart is set for the RESTART run of an approved request: the approval is
	// the gate's answer.
	approvedRestart bool
	// requestClaim is the claim an execute holds on the request of ReplayRequestID: the run's
	// insert marks the request EXECUTED under it, in the same transaction.
	requestClaim string
}

// Start starts a run of a job on this instance's pool and returns the run it made at once
// (STARTING); the job runs asynchronously. Outcomes: the run; NOT_FOUND; ALREADY_RUNNING (the
// Redis lock is held, or the database already has an active run); CAPACITY_EXCEEDED (no free
// slot — checked before anything is written); JOB_PAUSED; MAINTENANCE; and for a manual
// RESTART that could repeat effects, REPLAY_BLOCKED (targets of the current generation in
// doubt) or APPROVAL_REQUIRED (a HIGH-risk job: request it with ReplayService.RequestRestart).
// A SCHEDULED start whose fire is no longer due (another instance claimed it) returns nil and
// no error.
func (r *Runner) Start(ctx context.Context, p StartParams) (run *RunRecord, err error) {
	a := &startAttempt{r: r, p: p, t0: time.Now()}
	if (p.Trigger == "" || p.Trigger == bt.TriggerManual) && !p.noAudit {
		defer func() {
			r.audit(ctx, a.p.Actor, "startJob", "job:"+a.p.Job, map[string]any{"mode": a.p.Mode, "runId": runIDOf(run)}, err)
		}()
	}
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	if cap(r.slots) == 0 && !a.p.local && r.cfg.RemoteStartWait > 0 {
		return r.handover.start(ctx, a.p)
	}
	return a.startLocally(ctx)
}

func runIDOf(run *RunRecord) int64 {
	if run == nil {
		return 0
	}
	return run.ID
}

// startAttempt is one start as its steps fill it in.
type startAttempt struct {
	r            *Runner
	p            StartParams
	job          Job
	t0           time.Time
	scheduledFor *time.Time // the claimed fire of a SCHEDULED start
	token        string     // the run's lease token, and the Redis lock's
	lease        time.Duration
	locked       bool // the Redis lock is held
}

// check looks the job up, fills the start's defaults and refuses what may not start: an
// invalid mode, a RESTART the gate holds, an instance shutting down.
func (a *startAttempt) check(ctx context.Context) error {
	r, p := a.r, &a.p
	job, ok := r.Job(p.Job)
	if !ok {
		return bt.Errorf(bt.CodeNotFound, "job %q is not registered", p.Job)
	}
	a.job, a.lease = job, leaseOf(job, r.cfg.DefaultLease)
	if p.Trigger == "" {
		p.Trigger = bt.TriggerManual
	}
	if p.Mode == "" {
		p.Mode = bt.ModeResume
	}
	if p.Mode != bt.ModeResume && p.Mode != bt.ModeRestart {
		return bt.Errorf(bt.CodeInvalidInput, "mode must be RESUME or RESTART, not %q", p.Mode)
	}
	if p.Actor == "" {
		p.Actor = "system"
	}
	// The RESTART gate: a manual RESTART opens a new generation, calling every target again
	// under new keys. Where that can repeat effects (a HIGH-risk job, targets in doubt) it
	// needs a request and a second person's approval (RequestRestart). Scheduled fires and
	// RESUME are not gated; a start handed over by another instance passed its gate there.
	if p.Trigger == bt.TriggerManual && p.Mode == bt.ModeRestart && !p.approvedRestart && !p.local {
		if err := r.replays.Gate(ctx, p.Job); err != nil {
			return err
		}
	}
	if r.draining.Load() {
		return bt.Errorf(bt.CodeShuttingDown, "instance %s is shutting down", r.cfg.Instance)
	}
	return nil
}

// startLocally takes a slot, claims the fire of a SCHEDULED start, takes the lock, inserts the
// run and hands it to a worker goroutine on the slot.
func (a *startAttempt) startLocally(ctx context.Context) (*RunRecord, error) {
	r := a.r
	r.startMu.RLock()
	defer r.startMu.RUnlock()
	if err := a.takeSlot(); err != nil {
		return nil, err
	}
	handedOff := false
	defer func() {
		if !handedOff {
			r.freeSlot()
		}
	}()

	// From the claim on, the start runs to a known outcome even if the caller goes away (a
	// scheduler stopping, an HTTP request cancelled): a cancellation that lands while a COMMIT
	// is on the wire would report an error for a claim or a run that did commit, leaving a fire
	// neither run nor recorded, or an orphan STARTING run that blocks the job for a lease.
	callerCtx := ctx
	ctx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancelStart()

	a.token = newToken()
	if claimed, err := a.claimFire(ctx, callerCtx); err != nil || !claimed {
		return nil, err
	}
	if err := a.gateFire(ctx); err != nil {
		return nil, err
	}
	ctx, span := a.startSpan(ctx)
	if err := a.lock(ctx); err != nil {
		endRefused(span, err)
		return nil, err
	}
	run, err := a.insertRun(ctx)
	if err != nil || run == nil {
		endRefused(span, err)
		return nil, err
	}
	handedOff = true
	a.runStarted(ctx, span, run)
	a.handOff(ctx, run, span)
	return run, nil
}

// takeSlot takes a free worker slot, or refuses with SHUTTING_DOWN or CAPACITY_EXCEEDED. The
// caller holds startMu shared, so that Shutdown waits for the worker it starts.
func (a *startAttempt) takeSlot() error {
	r := a.r
	if r.draining.Load() {
		return bt.Errorf(bt.CodeShuttingDown, "instance %s is shutting down", r.cfg.Instance)
	}
	select {
	case r.slots <- struct{}{}:
		return nil
	default:
		r.metrics.CapacityExceeded.Inc()
		return bt.Errorf(bt.CodeCapacityExceeded, "all %d worker slots of instance %s are busy", cap(r.slots), r.cfg.Instance)
	}
}

// claimFire claims the due fire of a SCHEDULED start by compare-and-set, recording the fires it
// missed, and reports whether it holds the fire. A fire another instance claimed is not
// claimed, without error. Other triggers have no fire to claim.
func (a *startAttempt) claimFire(ctx, callerCtx context.Context) (bool, error) {
	r, p := a.r, a.p
	if p.Trigger != bt.TriggerScheduled {
		return true, nil
	}
	if callerCtx.Err() != nil {
		return false, callerCtx.Err()
	}
	claimed, err := connretry.OnConnect(ctx, func() (bool, error) { return r.store.ClaimFire(ctx, p.Job, p.Due, p.Next) })
	if err != nil || !claimed {
		return false, err
	}
	if len(p.Missed) > 0 {
		r.metrics.FiresSkipped.Add(float64(len(p.Missed)))
		detail := fmt.Sprintf("no scheduler claimed it in time; the fire of %s ran instead", p.Due.UTC().Format(time.RFC3339))
		if _, err := connretry.OnConnect(ctx, func() (struct{}, error) {
			return struct{}{}, r.store.RecordMissedFires(ctx, p.Job, p.Missed, r.cfg.Instance, detail)
		}); err != nil {
			r.log.Error("record missed fires", "job", p.Job, "err", err)
		}
	}
	due := p.Due
	a.scheduledFor = &due
	return true, nil
}

// gateFire passes a claimed SCHEDULED RESTART fire through the RESTART gate's in-doubt check,
// the one a manual RESTART meets: a new generation would call the targets in doubt again under
// new keys. A blocked fire is recorded BLOCKED_IN_DOUBT, counted, and raised as the
// SCHEDULED_FIRE_BLOCKED alarm (judged from that record) until a run of the job starts.
func (a *startAttempt) gateFire(ctx context.Context) error {
	r, p := a.r, a.p
	if a.scheduledFor == nil || p.Mode != bt.ModeRestart {
		return nil
	}
	err := r.replays.InDoubtGate(ctx, p.Job)
	if err == nil {
		return nil
	}
	switch bt.CodeOf(err) {
	case "":
		a.recordSkip(ctx, "SKIPPED_ERROR", err.Error())
	case bt.CodeReplayBlocked:
		r.metrics.FiresBlocked.Inc()
		r.log.Warn("scheduled RESTART blocked: targets in doubt", "job", p.Job, "fire", p.Due, "err", err)
		a.recordEvent(ctx, "BLOCKED_IN_DOUBT", err.Error())
	case bt.CodeAlreadyRunning:
		a.recordSkip(ctx, "SKIPPED_RUNNING", "active run in database")
	default:
		a.recordSkip(ctx, "SKIPPED_"+string(bt.CodeOf(err)), err.Error())
	}
	return err
}

// lock takes the job's Redis lock for the lease. Redis is the fast path, not the guard: the
// database index still refuses a second active run, so a Redis outage does not stop every job
// (the start goes on unlocked). A lock held elsewhere is ALREADY_RUNNING.
func (a *startAttempt) lock(ctx context.Context) error {
	r := a.r
	lockCtx, cancelLock := context.WithTimeout(ctx, redisTimeout(a.lease))
	locked, err := r.locks.Acquire(lockCtx, a.p.Job, a.token, a.lease)
	cancelLock()
	switch {
	case err != nil:
		r.metrics.LockErrors.Inc()
		r.log.Warn("redis lock unavailable; relying on the database guard", "job", a.p.Job, "err", err)
	case !locked:
		r.metrics.LockContention.Inc()
		a.recordSkip(ctx, "SKIPPED_RUNNING", "lock held in Redis")
		return bt.Errorf(bt.CodeAlreadyRunning, "job %q is already running (lock held)", a.p.Job)
	}
	a.locked = locked
	return nil
}

// insertRun inserts the STARTING run. On failure it gives the lock back and records a scheduled
// fire as skipped; a fire that already started a run returns nil and no error.
func (a *startAttempt) insertRun(ctx context.Context) (*RunRecord, error) {
	r, p := a.r, a.p
	run, err := connretry.OnConnect(ctx, func() (*bt.RunRecord, error) {
		return r.store.InsertRun(ctx, store.NewRun{
			JobName: p.Job, Trigger: p.Trigger, Mode: p.Mode, Actor: p.Actor, Instance: r.cfg.Instance, Token: a.token,
			LeaseSeconds: leaseSecondsFor(a.lease), JobVersion: a.job.Info().Version, ScheduledFor: a.scheduledFor,
			Generation: p.Generation, FromStart: p.FromStart, ReplayRequestID: p.ReplayRequestID, AutoResumeOf: p.autoResumeOf,
			TraceParent: pipeline.TraceParent(ctx), RequestClaim: p.requestClaim,
		})
	})
	if err == nil {
		return run, nil
	}
	if a.locked {
		_, _ = r.locks.Release(context.WithoutCancel(ctx), p.Job, a.token)
	}
	if errors.Is(err, store.ErrResumeTaken) {
		// Another instance continued the ended run first, or a later run superseded it.
		return nil, nil
	}
	if errors.Is(err, store.ErrFireTaken) {
		// The fire was claimed a second time (its claim set back): it already ran, and its
		// run is its record. Like a claim lost to another instance, there is nothing to do.
		r.log.Warn("fire already started a run; not starting it again", "job", p.Job, "fire", p.Due)
		return nil, nil
	}
	if errors.Is(err, store.ErrClaimLost) {
		return nil, bt.Errorf(bt.CodeConflict, "the claim on request %d lapsed and another execute took it, or the request was decided again: this run did not start", *p.ReplayRequestID)
	}
	if errors.Is(err, bt.ErrAlreadyRunning) {
		r.metrics.LockContention.Inc()
		a.recordSkip(ctx, "SKIPPED_RUNNING", "active run in database")
	} else if p.Trigger == bt.TriggerScheduled {
		a.recordSkip(ctx, "SKIPPED_"+string(bt.CodeOf(err)), err.Error())
	}
	return nil, err
}

// handOff gives the inserted run to a worker goroutine on the slot taken for it. When the
// operator's lease override replaced the job's lease, the Redis lock is extended to it first:
// the run, its renewals and the lock hold that one from here on.
func (a *startAttempt) handOff(ctx context.Context, run *RunRecord, span trace.Span) {
	r := a.r
	if got := time.Duration(run.LeaseSeconds) * time.Second; got != a.lease && a.locked {
		lockCtx, cancelLock := context.WithTimeout(ctx, redisTimeout(got))
		if _, err := r.locks.Extend(lockCtx, a.p.Job, a.token, got); err != nil {
			r.log.Warn("extend redis lock to the lease override; the database lease still fences", "job", a.p.Job, "err", err)
		}
		cancelLock()
	}
	own := *run // the worker's; the caller keeps the record Start returns
	w := r.newRun(a.job, &own, a.token, a.p.ReplayScope, a.p.ReplayTargets, span)
	r.workers.Add(1)
	go r.work(w)
	r.metrics.RunsStarted.WithLabelValues(string(a.p.Trigger)).Inc()
	r.metrics.StartLatency.Observe(time.Since(a.t0).Seconds())
	if a.scheduledFor != nil {
		if now, err := r.store.Now(ctx); err == nil {
			r.metrics.ScheduleLateness.Observe(now.Sub(*a.scheduledFor).Seconds())
		}
	}
}

// recordSkip records a scheduled fire that did not start a run.
func (a *startAttempt) recordSkip(ctx context.Context, outcome, detail string) {
	if a.scheduledFor == nil {
		return
	}
	a.r.metrics.FiresSkipped.Inc()
	a.recordEvent(ctx, outcome, detail)
}

// recordEvent records the outcome of a scheduled fire that did not start a run.
func (a *startAttempt) recordEvent(ctx context.Context, outcome, detail string) {
	r, p, at := a.r, a.p, a.scheduledFor
	if at == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	if _, err := connretry.OnConnect(ctx, func() (struct{}, error) {
		return struct{}{}, r.store.RecordScheduleEvent(ctx, p.Job, *at, outcome, r.cfg.Instance, detail)
	}); err != nil {
		r.log.Error("record skipped fire", "job", p.Job, "err", err)
	}
}

// startTimeout bounds the database and Redis work of one Start once it has begun.
const startTimeout = 15 * time.Second

// leaseSecondsFor rounds a lease up to whole seconds (the database stores seconds).
func leaseSecondsFor(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
