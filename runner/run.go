package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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

	mu          sync.Mutex
	rec         bt.Run     // latest known state
	leaseEnd    time.Time  // local (NowFunc) time the lease ends, conservatively
	flagsAt     time.Time  // local time the flags were last read
	stop        bt.StopReason // set once a stop was seen or requested locally
	lost        bool
	ledgerEmpty bool // the generation had no ledger rows when the run started
}

// ErrStop is returned by Check and Process when the run has been asked to stop (cancel, pause,
// maintenance, shutdown) or has lost its lease. Return it from Job.Run.
var ErrStop = bt.ErrStopped

func (r *Runner) newRun(job Job, rec *bt.Run, token string, scope []LedgerState) *Run {
	info := job.Info()
	run := &Run{
		r: r, job: job, info: info, retry: info.Retry.withDefaults(),
		fence: postgres.Fence{RunID: rec.ID, Token: token},
		lease: time.Duration(rec.LeaseSeconds) * time.Second,
		log:   r.log.With("job", rec.JobName, "run", rec.ID),
		rec:   *rec,
	}
	if scope != nil {
		run.scope = map[bt.LedgerState]bool{}
		for _, s := range scope {
			run.scope[s] = true
		}
	}
	return run
}

// ID returns the run id.
func (run *Run) ID() int64 { return run.fence.RunID }

// JobName returns the job's name.
func (run *Run) JobName() string { return run.rec.JobName }

// Trigger returns why the run started.
func (run *Run) Trigger() Trigger { return run.rec.Trigger }

// Mode returns RESUME or RESTART.
func (run *Run) Mode() Mode { return run.rec.Mode }

// Generation returns the ledger generation the run writes to.
func (run *Run) Generation() int64 { return run.rec.Generation }

// Checkpoint returns the token to resume after: the last committed checkpoint of the
// generation for a RESUME run, "" for RESTART and replays.
func (run *Run) Checkpoint() string { return run.rec.StartCheckpoint }

// Logger returns a logger tagged with the job and run.
func (run *Run) Logger() *slog.Logger { return run.log }

// Snapshot returns the run's latest known state.
func (run *Run) Snapshot() bt.Run {
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
		run.r.metrics.leaseLost.Inc()
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

// renew extends the Redis lock by compare-and-set on the token, then the database lease.
func (run *Run) renew(ctx context.Context) error {
	ok, err := run.r.locks.Extend(ctx, run.rec.JobName, run.fence.Token, run.lease)
	if err != nil {
		run.r.metrics.lockErrors.Inc()
		run.log.Warn("extend redis lock failed; the database lease still fences", "err", err)
	} else if !ok {
		// The key was lost (Redis restarted or flushed). Take it back so Redis keeps
		// pre-empting; if another token holds it, the database lease still decides.
		if got, err := run.r.locks.Acquire(ctx, run.rec.JobName, run.fence.Token, run.lease); err != nil || !got {
			run.log.Warn("redis lock lost and not re-acquired; the database lease still fences", "err", err)
		}
	}
	sent := run.now()
	ls, pause, err := run.r.store.Renew(ctx, run.fence)
	if err != nil {
		return run.fail(err)
	}
	run.apply(sent, ls, pause)
	run.r.metrics.leaseRenewals.Inc()
	return nil
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

// write commits one fenced item write and applies what it returned.
func (run *Run) write(ctx context.Context, w *postgres.ItemWrite, writes []postgres.TxFunc) error {
	w.JobName, w.Generation = run.rec.JobName, run.rec.Generation
	sent := run.now()
	ls, pause, err := run.r.store.WriteItem(ctx, run.fence, w, writes)
	if err != nil {
		return run.fail(err)
	}
	run.apply(sent, ls, pause)
	return nil
}

// Skip records an item as skipped (nothing to do) and advances the checkpoint.
func (run *Run) Skip(ctx context.Context, item Item, reason string) error {
	if err := run.Check(ctx); err != nil {
		return err
	}
	w := run.baseWrite(item)
	w.State, w.CountInRun, w.Processed, w.Skipped = bt.LedgerSkipped, true, 1, 1
	w.LastError = &reason
	if err := run.write(ctx, w, nil); err != nil {
		return err
	}
	run.r.metrics.items.WithLabelValues(string(bt.LedgerSkipped)).Inc()
	run.publish(false)
	return nil
}

// Fail records an item as failed without calling anything (the job found it bad itself):
// an error row, the ledger state ClassOf(err) gives, and the checkpoint advance.
func (run *Run) Fail(ctx context.Context, item Item, cause error) error {
	if err := run.Check(ctx); err != nil {
		return err
	}
	state := ClassOf(cause, false)
	w := run.baseWrite(item)
	run.setFailure(w, state, cause, 0, errorSignature(state, cause), 1)
	if err := run.write(ctx, w, nil); err != nil {
		return err
	}
	run.r.metrics.items.WithLabelValues(string(state)).Inc()
	run.publish(false)
	return nil
}

func (run *Run) baseWrite(item Item) *postgres.ItemWrite {
	w := &postgres.ItemWrite{
		Target: item.Target, Step: item.Step, External: item.External, Shard: item.Shard,
		IdempotencyKey: IdempotencyKey(run.rec.JobName, run.rec.Generation, item.Target, item.Step),
		InputHash:      inputHash(item.Input),
	}
	if item.Checkpoint != "" {
		cp := item.Checkpoint
		w.Checkpoint = &cp
	}
	return w
}

// setFailure fills a final failure write: ledger state, counters and error row. sig and same
// say which failure this is and how many times in a row the target has failed that way.
func (run *Run) setFailure(w *postgres.ItemWrite, state bt.LedgerState, cause error, attempt int, sig string, same int) {
	msg := cause.Error()
	w.State, w.CountInRun, w.Processed, w.Attempt = state, true, 1, attempt
	w.LastError, w.ErrorSig, w.SameErrorCount = &msg, &sig, same
	if state == bt.LedgerAmbiguous {
		w.Ambiguous = 1
	} else {
		w.Failed = 1
	}
	w.ErrorClass, w.ErrorMessage = string(state), truncate(msg, 2000)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// IdempotencyKey returns the stable key of (job, generation, target, step): the same on every
// attempt and every run of the generation, different across generations.
func IdempotencyKey(job string, gen int64, target, step string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s", job, gen, target, step)
	return "bt_" + hex.EncodeToString(h.Sum(nil)[:16])
}

func inputHash(input any) string {
	if input == nil {
		return ""
	}
	b, err := json.Marshal(input)
	if err != nil {
		b = fmt.Appendf(nil, "%#v", input)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Process runs fn for one item and commits its result — ledger row, counters, checkpoint and
// the job's own writes queued with Attempt.Tx — in one short transaction. No connection is
// held while fn runs. For an External item the intent (IN_FLIGHT, attempt n, idempotency key)
// is committed before fn is called, so a crash at any point leaves the target CONFIRMED,
// untouched, or AMBIGUOUS_EFFECT — never done twice.
//
// The ledger decides first: a target already CONFIRMED is skipped; one left IN_FLIGHT by a
// dead worker becomes AMBIGUOUS_EFFECT without a call; an AMBIGUOUS one stays quarantined;
// rejected classes are retried only when a replay's scope includes them. TRANSIENT failures
// are retried within the run with capped exponential backoff and jitter.
//
// Process returns nil once the item's outcome is committed, success or failure; it returns
// an error only when the job must stop (ErrStop, a lost lease, or a database failure).
func (run *Run) Process(ctx context.Context, item Item, fn func(ctx context.Context, a *Attempt) error) error {
	if err := run.Check(ctx); err != nil {
		return err
	}
	prior, err := run.priorLedger(ctx, item)
	if err != nil {
		return err
	}
	w := run.baseWrite(item)
	if prior != nil {
		w.InputChanged = prior.InputHash != "" && w.InputHash != "" && prior.InputHash != w.InputHash
		if done, err := run.decideFromLedger(ctx, item, *prior, w); done || err != nil {
			return err
		}
	}
	attempt, prevSig, prevCount := 0, "", 0
	if prior != nil {
		attempt, prevSig, prevCount = prior.Attempt, prior.ErrorSig, prior.SameErrorCount
	}
	for try := 1; ; try++ {
		attempt++
		if item.External {
			intent := *w
			intent.State, intent.Attempt, intent.Checkpoint = bt.LedgerInFlight, attempt, nil
			if err := run.write(ctx, &intent, nil); err != nil {
				return err
			}
		}
		a := &Attempt{IdempotencyKey: w.IdempotencyKey, Number: attempt, Target: item.Target, Step: item.Step}
		callErr := run.call(ctx, fn, a)
		if callErr == nil {
			res := *w
			res.State, res.CountInRun, res.Attempt, res.Processed, res.Succeeded = bt.LedgerConfirmed, true, attempt, 1, 1
			res.EffectRef, res.EvidenceRef = a.effectRef, a.evidenceRef
			writes := make([]postgres.TxFunc, len(a.writes))
			for i, fn := range a.writes {
				writes[i] = postgres.TxFunc(fn)
			}
			if err := run.write(ctx, &res, writes); err != nil {
				return err
			}
			run.r.metrics.items.WithLabelValues(string(bt.LedgerConfirmed)).Inc()
			run.publish(false)
			return nil
		}
		state := ClassOf(callErr, item.External)
		if _, ok := callErr.(panicError); ok {
			state = bt.LedgerBugSuspected
		}
		sig := errorSignature(state, callErr)
		if sig == prevSig {
			prevCount++
		} else {
			prevSig, prevCount = sig, 1
		}
		if state == bt.LedgerTransient && prevCount >= 3 {
			state = bt.LedgerBugSuspected
		}
		res := *w
		run.setFailure(&res, state, callErr, attempt, sig, prevCount)
		if state == bt.LedgerTransient && try < run.retry.MaxAttempts {
			err := run.backoff(ctx, try)
			if err == nil {
				continue
			}
			if errors.Is(err, bt.ErrLeaseLost) {
				return err
			}
			// Asked to stop while waiting: record the failure, keep the checkpoint so a
			// RESUME retries this target.
			res.Checkpoint = nil
			if werr := run.write(ctx, &res, nil); werr != nil {
				return werr
			}
			return err
		}
		if err := run.write(ctx, &res, nil); err != nil {
			return err
		}
		run.r.metrics.items.WithLabelValues(string(res.State)).Inc()
		run.publish(false)
		return nil
	}
}

// call runs fn with a context that ends with the lease, turning a panic into an error.
func (run *Run) call(ctx context.Context, fn func(ctx context.Context, a *Attempt) error, a *Attempt) (err error) {
	ictx, cancel := run.itemContext(ctx)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			run.log.Error("item panicked", "target", a.Target, "panic", v)
			err = panicError{v}
		}
	}()
	if err := ictx.Err(); err != nil {
		// A worker paused past its lease must not start a call.
		return Transient(fmt.Errorf("lease ended before the call: %w", err))
	}
	err = fn(ictx, a)
	if err != nil && isDeadline(ictx, err) && ClassOf(err, false) == bt.LedgerTransient {
		if _, explicit := err.(*classified); !explicit {
			err = fmt.Errorf("item deadline (lease end) reached: %w", err)
		}
	}
	return err
}

// backoff waits before retry number try, at safe points, with full jitter.
func (run *Run) backoff(ctx context.Context, try int) error {
	d := run.retry.InitialBackoff << (try - 1)
	if d <= 0 || d > run.retry.MaxBackoff {
		d = run.retry.MaxBackoff
	}
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return run.Check(ctx)
}

// priorLedger returns the ledger row of item's target and step in this generation, if any.
func (run *Run) priorLedger(ctx context.Context, item Item) (*postgres.LedgerRow, error) {
	run.mu.Lock()
	empty := run.ledgerEmpty
	run.mu.Unlock()
	if empty {
		return nil, nil
	}
	rows, err := run.r.store.LedgerRows(ctx, run.rec.JobName, run.rec.Generation, item.Step, []string{item.Target})
	if err != nil {
		return nil, err
	}
	if row, ok := rows[item.Target]; ok {
		return &row, nil
	}
	return nil, nil
}

// decideFromLedger handles a target the ledger already knows. It reports done=true when the
// item needs no call (skipped, left quarantined or turned ambiguous).
func (run *Run) decideFromLedger(ctx context.Context, item Item, prior postgres.LedgerRow, w *postgres.ItemWrite) (bool, error) {
	res := *w
	res.Processed = 1
	switch {
	case prior.State == bt.LedgerConfirmed || prior.State == bt.LedgerSkipped:
		res.Skipped = 1
	case prior.State == bt.LedgerInFlight:
		// A dead worker's intent: the call may have landed. Never call again.
		msg := "found IN_FLIGHT from an earlier attempt: the effect may have happened"
		res.State, res.CountInRun, res.Attempt, res.Ambiguous = bt.LedgerAmbiguous, true, prior.Attempt, 1
		res.LastError, res.ErrorClass, res.ErrorMessage = &msg, string(bt.LedgerAmbiguous), msg
	case prior.State == bt.LedgerAmbiguous:
		res.Ambiguous = 1
	case prior.State == bt.LedgerTransient || prior.State == bt.LedgerNotApplied:
		return false, nil
	case run.scope[prior.State]:
		return false, nil
	default:
		// A rejected class outside the replay's scope: leave it for the fix queue.
		res.Skipped = 1
	}
	if err := run.write(ctx, &res, nil); err != nil {
		return true, err
	}
	run.r.metrics.items.WithLabelValues("LEDGER_" + string(prior.State)).Inc()
	run.publish(false)
	return true, nil
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
	_, _ = run.r.locks.Release(ctx, run.rec.JobName, run.fence.Token)
}
