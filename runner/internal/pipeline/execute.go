package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/connretry"
	"github.com/baton-run/baton/runner/store"
)

// Execute runs the job on the calling goroutine: activate, body, finish — releasing the Redis
// lock however it ends. body is the job; a panic in it fails the run.
func (run *Run) Execute(body func(ctx context.Context) error) {
	defer run.endRunSpan()
	defer run.cancel()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), RedisTimeout(run.lease))
		defer cancel()
		if _, err := run.d.Locks.Release(ctx, run.started.JobName, run.fence.Token); err != nil {
			run.log.Warn("release redis lock", "err", err)
		}
	}()
	if !run.activate() {
		return
	}
	jobErr := runBody(run.jobCtx, run.log, body)
	if errors.Is(jobErr, ErrHandedToShards) {
		// A sharded run's plan: its shards have it now, and it ends with the last of them.
		run.log.Info("run handed to its shards")
		if run.span != nil {
			run.span.AddEvent("handed to its shards")
			if run.d.FollowSpan != nil {
				// The span covers the run's life: it ends with the last shard, not here.
				run.d.FollowSpan(run.span, run.started.ID)
				run.spanFollowed = true
			}
		}
		return
	}
	// The last batch's results may still be on their way: the run ends after them.
	if err := run.Sync(context.Background()); err != nil && jobErr == nil {
		jobErr = err
	}
	run.stats.flush(context.Background(), run.d.Store, run.fence, run.log, true)
	run.finish(jobErr)
}

// activate moves the run from STARTING to RUNNING under its lease and learns whether its
// generation's ledger is empty. It reports false when the run may not go on.
func (run *Run) activate() bool {
	sent := run.now()
	// Until the lease ends: after that the recoverer fails the run anyway.
	ctx, cancel := context.WithTimeout(run.jobCtx, run.lease)
	res, err := connretry.OnConnect(ctx, func() (fenceReply, error) {
		sent = run.now()
		ls, pause, err := run.d.Store.Activate(ctx, run.fence)
		return fenceReply{ls, pause}, err
	})
	cancel()
	if err != nil {
		run.log.Error("activate run", "err", err)
		if run.span != nil {
			endSpanError(run.span, err)
		}
		return false
	}
	run.st.apply(sent, res.LeaseState, res.pause)
	run.st.running()
	if counts, err := run.d.Store.LedgerCounts(run.jobCtx, run.started.JobName, run.started.Generation, 0); err == nil {
		total := int64(0)
		for _, n := range counts {
			total += n
		}
		run.written.startEmpty(total == 0)
	}
	run.log.Info("run started", "trigger", run.started.Trigger, "mode", run.started.Mode, "generation", run.started.Generation,
		"checkpoint", run.started.StartCheckpoint)
	run.publish(false)
	return true
}

// finish records the run's outcome under its lease.
func (run *Run) finish(jobErr error) {
	status, reason, msg := outcome(run.log, jobErr, run.st.ending())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Retried while the database is away (a failover: the pool's sessions on the old primary
	// break, new ones wait for the promoted standby): the end is fenced, so a retry after an
	// end that did land is refused, and the run is recorded by its worker, not its lease.
	rec, err := connretry.OnUnavailable(ctx, func() (*bt.RunRecord, error) {
		return run.d.Store.Finish(ctx, run.fence, status, reason, msg)
	})
	if err != nil {
		// Lease lost: the recoverer (or shutdown) already ended the run; write nothing.
		run.log.Warn("finish refused", "status", status, "err", err)
		return
	}
	run.st.ended(rec, false)
	run.d.Metrics.RunsFinished.WithLabelValues(string(status)).Inc()
	run.log.Info("run finished", "status", rec.Status, "reason", reason, "processed", rec.Processed)
	// A shard its job's policy resumes is PENDING again, not ended.
	run.publish(!rec.Status.Open())
}

// ErrHandedToShards is what the body of a sharded run returns once PlanShards has handed the
// run to its shards: Execute then leaves the run to them instead of finishing it.
var ErrHandedToShards = errors.New("the run was handed to its shards")

// Fenced makes a fenced write the store makes for the runner (a sharded run's plan) and
// applies the lease state and flags it returns; it returns, as Check does, why the run must
// stop, if it must.
func (run *Run) Fenced(ctx context.Context, write func(ctx context.Context, f store.Fence) (store.LeaseState, bt.StopReason, error)) error {
	sent := run.now()
	ls, pause, err := write(ctx, run.fence)
	if err != nil {
		return run.st.fail(err)
	}
	run.st.apply(sent, ls, pause)
	return run.st.err()
}

// runBody calls the job, turning a panic into an error.
func runBody(ctx context.Context, log *slog.Logger, body func(ctx context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("job panicked", "panic", v)
			err = panicError{v}
		}
	}()
	return body(ctx)
}

// outcome decides a run's final status from what the job returned and how the run was
// ending. The message is shown to API clients: a panic or an internal error (the database's,
// Redis's, the store's) is logged under a reference and shown as that reference (see
// PublicErrorText).
func outcome(log *slog.Logger, jobErr error, e ending) (bt.RunStatus, bt.StopReason, string) {
	var p panicError
	switch {
	case errors.As(jobErr, &p):
		return bt.StatusFailed, bt.StopPanic, PublicErrorText(log, jobErr)
	case e.lost:
		return bt.StatusFailed, bt.StopLeaseExpired, "lease lost"
	case e.dbLost && jobErr != nil:
		log.Warn("run ends: the database went away mid-run", "err", jobErr)
		return bt.StatusFailed, bt.StopDatabase, fmt.Sprintf(
			"the database went away mid-run (a restart or a failover) at checkpoint %q; RESUME continues from there", e.checkpoint)
	case jobErr == nil:
		return bt.StatusSucceeded, "", ""
	case errors.Is(jobErr, bt.ErrStopped) || errors.Is(jobErr, context.Canceled):
		return stoppedOutcome(log, jobErr, e)
	default:
		return bt.StatusFailed, bt.StopError, PublicErrorText(log, jobErr)
	}
}

// stoppedOutcome is the outcome of a job that returned because it was asked to stop.
func stoppedOutcome(log *slog.Logger, jobErr error, e ending) (bt.RunStatus, bt.StopReason, string) {
	switch e.stop {
	case bt.StopCancelled:
		return bt.StatusCancelled, e.stop, "cancelled at an item boundary; committed items stay"
	case bt.StopPaused, bt.StopMaintenance:
		return bt.StatusPaused, e.stop, fmt.Sprintf("paused at checkpoint %q; resume continues from there", e.checkpoint)
	case bt.StopShutdown:
		return bt.StatusFailed, e.stop, fmt.Sprintf("interrupted by instance shutdown at checkpoint %q; start with RESUME to continue", e.checkpoint)
	case bt.StopCondition:
		if d := e.tripped; d != nil {
			return bt.StatusFailed, e.stop, fmt.Sprintf("stopped itself: stop condition %q tripped: %s (threshold %.1f%%); committed items stay",
				d.Name, d.Detail, d.Threshold*100)
		}
		return bt.StatusFailed, e.stop, "stopped itself: a stop condition tripped"
	case "":
		return bt.StatusFailed, bt.StopError, PublicErrorText(log, jobErr)
	default:
		return bt.StatusFailed, e.stop, PublicErrorText(log, jobErr)
	}
}
