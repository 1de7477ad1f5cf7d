package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// work runs one job on its slot: activate, run, finish, release — always freeing the slot and
// the lock, whatever the job does.
func (r *Runner) work(run *Run) {
	defer r.workers.Done()
	defer r.freeSlot()
	jobCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run.cancel = cancel

	r.activeMu.Lock()
	r.active[run.ID()] = run
	draining := r.draining.Load()
	r.activeMu.Unlock()
	defer func() {
		r.activeMu.Lock()
		delete(r.active, run.ID())
		r.activeMu.Unlock()
	}()
	if draining {
		run.requestStop(bt.StopShutdown)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), redisTimeout(run.lease))
		defer cancel()
		if _, err := r.locks.Release(ctx, run.started.JobName, run.fence.Token); err != nil {
			run.log.Warn("release redis lock", "err", err)
		}
	}()

	sent := run.now()
	// Until the lease ends: after that the recoverer fails the run anyway.
	actCtx, cancelAct := context.WithTimeout(jobCtx, run.lease)
	ls, err := onConnect(actCtx, func() (fenceReply, error) {
		sent = run.now()
		ls, pause, err := r.store.Activate(actCtx, run.fence)
		return fenceReply{ls, pause}, err
	})
	cancelAct()
	pause := ls.pause
	if err != nil {
		run.log.Error("activate run", "err", err)
		return
	}
	run.apply(sent, ls.LeaseState, pause)
	run.mu.Lock()
	run.rec.Status = bt.StatusRunning
	run.mu.Unlock()
	if counts, err := r.store.LedgerCounts(jobCtx, run.started.JobName, run.started.Generation, 0); err == nil {
		total := int64(0)
		for _, n := range counts {
			total += n
		}
		run.mu.Lock()
		run.ledgerEmpty = total == 0
		run.mu.Unlock()
	}
	run.log.Info("run started", "trigger", run.started.Trigger, "mode", run.started.Mode, "generation", run.started.Generation,
		"checkpoint", run.started.StartCheckpoint)
	run.publish(false)

	jobErr := r.runJob(jobCtx, run)
	// The last batch's results may still be on their way: the run ends after them.
	if err := run.Sync(context.Background()); err != nil && jobErr == nil {
		jobErr = err
	}
	run.flushStats(context.Background(), true)
	status, reason, msg := run.outcome(jobErr)
	ctx, cancelFinish := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelFinish()
	rec, err := onConnect(ctx, func() (*bt.RunRecord, error) { return r.store.Finish(ctx, run.fence, status, reason, msg) })
	if err != nil {
		// Lease lost: the recoverer (or shutdown) already ended the run; write nothing.
		run.log.Warn("finish refused", "status", status, "err", err)
		return
	}
	run.mu.Lock()
	run.rec = *rec
	run.mu.Unlock()
	r.metrics.RunsFinished.WithLabelValues(string(status)).Inc()
	run.log.Info("run finished", "status", status, "reason", reason, "processed", rec.Processed)
	run.publish(true)
}

// runJob calls the job, turning a panic into an error.
func (r *Runner) runJob(ctx context.Context, run *Run) (err error) {
	defer func() {
		if v := recover(); v != nil {
			run.log.Error("job panicked", "panic", v)
			err = panicError{v}
		}
	}()
	return run.job.Run(ctx, run)
}

// outcome decides a run's final status from what the job returned and what it was asked. The
// message is shown to API clients: a panic or an internal error (the database's, Redis's, the
// store's) is logged under a reference and shown as that reference (see publicErrorText).
func (run *Run) outcome(jobErr error) (bt.RunStatus, bt.StopReason, string) {
	run.mu.Lock()
	stop, lost, checkpoint := run.stop, run.lost, run.rec.Checkpoint
	run.mu.Unlock()
	var p panicError
	switch {
	case errors.As(jobErr, &p):
		return bt.StatusFailed, bt.StopPanic, publicErrorText(run.log, jobErr)
	case lost:
		return bt.StatusFailed, bt.StopLeaseExpired, "lease lost"
	case jobErr == nil:
		return bt.StatusSucceeded, "", ""
	case errors.Is(jobErr, bt.ErrStopped) || errors.Is(jobErr, context.Canceled):
		switch stop {
		case bt.StopCancelled:
			return bt.StatusCancelled, stop, "cancelled at an item boundary; committed items stay"
		case bt.StopPaused, bt.StopMaintenance:
			return bt.StatusPaused, stop, fmt.Sprintf("paused at checkpoint %q; resume continues from there", checkpoint)
		case bt.StopShutdown:
			return bt.StatusFailed, stop, fmt.Sprintf("interrupted by instance shutdown at checkpoint %q; start with RESUME to continue", checkpoint)
		case bt.StopCondition:
			run.mu.Lock()
			d := run.stopDetail
			run.mu.Unlock()
			if d != nil {
				return bt.StatusFailed, stop, fmt.Sprintf("stopped itself: stop condition %q tripped: %s (threshold %.1f%%); committed items stay",
					d.Name, d.Detail, d.Threshold*100)
			}
			return bt.StatusFailed, stop, "stopped itself: a stop condition tripped"
		case "":
			return bt.StatusFailed, bt.StopError, publicErrorText(run.log, jobErr)
		default:
			return bt.StatusFailed, stop, publicErrorText(run.log, jobErr)
		}
	default:
		return bt.StatusFailed, bt.StopError, publicErrorText(run.log, jobErr)
	}
}

// fenceReply is what a fenced write of a run returns: its lease state and stop reason.
type fenceReply struct {
	postgres.LeaseState
	pause bt.StopReason
}
