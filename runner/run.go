package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// Run is a job's handle on its current execution: progress, safe points, item processing.
// Its methods are safe for concurrent use by the job's goroutines.
type Run struct {
	r      *Runner
	job    Job
	info   JobInfo
	retry  RetryPolicy
	fence  postgres.Fence
	lease  time.Duration
	scope  map[bt.LedgerState]bool
	log    *slog.Logger
	cancel context.CancelFunc // cancels the job's context when abandoned

	// started is the run as it was handed to the worker. Its identity (job, generation,
	// trigger, mode, start checkpoint) never changes, so it is read without mu; rec is replaced
	// whole by the finish and by an abandon racing it, and is read under mu.
	started bt.RunRecord

	// scopeStates is scope as the store takes it: the states the transition table lets this
	// replay's intents and results move a target out of.
	scopeStates []bt.LedgerState

	mu          sync.Mutex
	rec         bt.RunRecord  // latest known state
	leaseEnd    time.Time     // local (NowFunc) time the lease ends, conservatively
	flagsAt     time.Time     // local time the flags were last read
	stop        bt.StopReason // set once a stop was seen or requested locally
	lost        bool
	ledgerEmpty bool // the generation had no ledger rows when the run started
	// written holds the targets this run wrote while ledgerEmpty holds (see noteWritten).
	written     map[uint64]struct{}
	writtenSeed maphash.Seed

	replay, replayFull bool
	stats              *callStats
	stopDetail         *bt.Check // the stop condition that tripped, if any

	// behind is the latest result write ProcessBatch left in flight (see writeBehind), nil
	// when none; behindSend serialises sending them.
	behindMu   sync.Mutex
	behind     *behindWrite
	behindSend sync.Mutex
}

// behindWrite is a write in flight: done closes when it has landed or failed with err. held
// says it holds a connection of its own (a staged write), so needs no other to finish. prev
// is the write in flight before it, kept only while it is the latest.
type behindWrite struct {
	done chan struct{}
	err  error
	held bool
	prev *behindWrite
}

// ErrStop is returned by Check and Process when the run has been asked to stop (cancel, pause,
// maintenance, shutdown) or has lost its lease. Return it from Job.Run.
var ErrStop = bt.ErrStopped

func (r *Runner) newRun(job Job, rec *bt.RunRecord, token string, scope bt.ReplayScope) *Run {
	info := job.Info()
	run := &Run{
		r: r, job: job, info: info, retry: info.Retry.withDefaults(),
		fence:   postgres.Fence{RunID: rec.ID, Token: token},
		lease:   time.Duration(rec.LeaseSeconds) * time.Second,
		log:     r.log.With("job", rec.JobName, "run", rec.ID),
		rec:     *rec,
		started: *rec,
		stats:   newCallStats(r.cfg.NowFunc),

		writtenSeed: maphash.MakeSeed(),
	}
	run.replay = rec.Trigger == bt.TriggerReplay
	run.replayFull = scope == bt.ScopeFull
	if scope != "" {
		run.scope = map[bt.LedgerState]bool{}
		for _, s := range scope.States() {
			run.scope[s] = true
		}
		run.scopeStates = scope.States()
	}
	return run
}

// ID returns the run id.
func (run *Run) ID() int64 { return run.fence.RunID }

// JobName returns the job's name.
func (run *Run) JobName() string { return run.started.JobName }

// Trigger returns why the run started.
func (run *Run) Trigger() Trigger { return run.started.Trigger }

// Mode returns RESUME or RESTART.
func (run *Run) Mode() Mode { return run.started.Mode }

// Generation returns the ledger generation the run writes to.
func (run *Run) Generation() int64 { return run.started.Generation }

// GenerationStartedAt returns when the first run of this run's generation started, by the
// database clock: a stable "business date" for a generation that spans several runs.
func (run *Run) GenerationStartedAt() time.Time { return run.started.GenerationStartedAt }

// Checkpoint returns the token to resume after: the last committed checkpoint of the
// generation for a RESUME run, "" for RESTART and replays.
func (run *Run) Checkpoint() string { return run.started.StartCheckpoint }

// Logger returns a logger tagged with the job and run.
func (run *Run) Logger() *slog.Logger { return run.log }

// Snapshot returns the run's latest known state.
func (run *Run) Snapshot() bt.RunRecord {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.rec
}

func (run *Run) now() time.Time { return run.r.cfg.NowFunc() }

// apply records what a fenced write returned. sent is the local time the write was sent, so
// the local lease end errs early, never late.
func (run *Run) apply(sent time.Time, ls postgres.LeaseState, pause bt.StopReason) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.leaseEnd = sent.Add(ls.Remaining)
	run.flagsAt = sent
	run.rec.Processed, run.rec.Succeeded, run.rec.Failed = ls.Processed, ls.Succeeded, ls.Failed
	run.rec.Skipped, run.rec.Ambiguous, run.rec.Checkpoint, run.rec.Total = ls.Skipped, ls.Ambiguous, ls.Checkpoint, ls.Total
	run.rec.CancelRequested, run.rec.PauseReason = ls.CancelRequested, pause
	if run.stop == "" {
		switch {
		case ls.CancelRequested:
			run.stop = bt.StopCancelled
		case pause == bt.StopMaintenance:
			run.stop = bt.StopMaintenance
		case pause != "":
			run.stop = bt.StopPaused
		}
	}
}

// fail records a write error; a lost lease is sticky.
func (run *Run) fail(err error) error {
	if errors.Is(err, bt.ErrLeaseLost) {
		run.mu.Lock()
		run.lost = true
		run.mu.Unlock()
		run.r.metrics.LeaseLost.Inc()
	}
	return err
}

func (run *Run) requestStop(reason bt.StopReason) {
	run.mu.Lock()
	if run.stop == "" {
		run.stop = reason
	}
	run.mu.Unlock()
}

func (run *Run) stopErr() error {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.lost {
		return bt.ErrLeaseLost
	}
	if run.stop != "" {
		return &bt.Error{Code: bt.CodeStopped, Message: "run asked to stop: " + string(run.stop)}
	}
	return nil
}

// Check is a safe point: it renews the lease when less than half is left, learns of cancel
// and pause requests, and returns ErrStop (wrapped) when the job must stop here.
func (run *Run) Check(ctx context.Context) error {
	if err := run.stopErr(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	run.mu.Lock()
	now := run.now()
	left := run.leaseEnd.Sub(now)
	stale := now.Sub(run.flagsAt) > min(time.Second, run.lease/4)
	run.mu.Unlock()
	switch {
	case left < run.lease/2:
		if err := run.renew(ctx); err != nil {
			return err
		}
	case stale:
		sent := run.now()
		ls, pause, err := run.r.store.Poll(ctx, run.fence)
		if err != nil {
			return run.fail(err)
		}
		run.apply(sent, ls, pause)
	}
	return run.stopErr()
}

// renew extends the database lease — the fence — and then the Redis lock, by compare-and-set
// on the token. The Redis call is bounded by a short timeout: a Redis outage must slow a
// renewal by at most that, never cost the run its lease.
func (run *Run) renew(ctx context.Context) error {
	sent := run.now()
	ls, pause, err := run.r.store.Renew(ctx, run.fence)
	if err != nil {
		return run.fail(err)
	}
	run.apply(sent, ls, pause)
	run.r.metrics.LeaseRenewals.Inc()

	rctx, cancel := context.WithTimeout(ctx, redisTimeout(run.lease))
	defer cancel()
	ok, err := run.r.locks.Extend(rctx, run.started.JobName, run.fence.Token, run.lease)
	if err != nil {
		run.r.metrics.LockErrors.Inc()
		run.log.Warn("extend redis lock failed; the database lease still fences", "err", err)
	} else if !ok {
		// The key was lost (Redis restarted or flushed). Take it back so Redis keeps
		// pre-empting; if another token holds it, the database lease still decides.
		if got, err := run.r.locks.Acquire(rctx, run.started.JobName, run.fence.Token, run.lease); err != nil || !got {
			run.log.Warn("redis lock lost and not re-acquired; the database lease still fences", "err", err)
		}
	}
	return nil
}

// redisTimeout bounds one lock operation: a tenth of the lease, between 50ms and 500ms.
func redisTimeout(lease time.Duration) time.Duration {
	return min(max(lease/10, 50*time.Millisecond), 500*time.Millisecond)
}

// itemContext returns a context that ends no later than the lease does.
func (run *Run) itemContext(ctx context.Context) (context.Context, context.CancelFunc) {
	run.mu.Lock()
	left := run.leaseEnd.Sub(run.now())
	run.mu.Unlock()
	return context.WithTimeout(ctx, left)
}

// SetTotal records how many items the run expects, for progress and ETA.
func (run *Run) SetTotal(ctx context.Context, n int64) error {
	sent := run.now()
	ls, pause, err := run.r.store.SetTotal(ctx, run.fence, n)
	if err != nil {
		return run.fail(err)
	}
	run.apply(sent, ls, pause)
	run.publish(false)
	return nil
}

func (run *Run) publish(final bool) {
	if run.r.cfg.Events == nil {
		return
	}
	run.r.cfg.Events.RunChanged(RunEvent{Run: run.Snapshot(), Final: final})
}

// abandon ends a run that did not stop within the shutdown timeout: it cancels the job's
// context and records the run FAILED (resumable) under its still-valid lease.
func (run *Run) abandon() {
	if run.cancel != nil {
		run.cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg := fmt.Sprintf("instance %s shut down before the job reached a boundary; start with RESUME to continue from checkpoint %q",
		run.r.cfg.Instance, run.Snapshot().Checkpoint)
	if rec, err := run.r.store.Finish(ctx, run.fence, bt.StatusFailed, bt.StopShutdownTimer, msg); err == nil {
		run.mu.Lock()
		run.rec = *rec
		run.lost = true
		run.mu.Unlock()
		run.publish(true)
	}
	_, _ = run.r.locks.Release(ctx, run.started.JobName, run.fence.Token)
}
