package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/connretry"
	"github.com/baton-run/baton/runner/store"
)

// state is what a run knows of itself and what it was asked: the record as the last fenced
// write returned it, the local lease end and the stop requests.
type state struct {
	leaseLost prometheus.Counter

	mu       sync.Mutex
	rec      bt.RunRecord  // latest known state; replaced whole by the finish or an abandon
	leaseEnd time.Time     // local (NowFunc) time the lease ends, conservatively
	flagsAt  time.Time     // local time the flags were last read
	stop     bt.StopReason // set once a stop was seen or requested locally
	lost     bool
	dbLost   bool // a database write failed because the database went away
	// tripped is the stop condition that stopped the run, if one did.
	tripped *bt.Check
}

// apply records what a fenced write returned. sent is the local time the write was sent, so
// the local lease end errs early, never late.
func (s *state) apply(sent time.Time, ls store.LeaseState, pause bt.StopReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaseEnd = sent.Add(ls.Remaining)
	s.flagsAt = sent
	s.rec.Processed, s.rec.Succeeded, s.rec.Failed = ls.Processed, ls.Succeeded, ls.Failed
	s.rec.Skipped, s.rec.Ambiguous, s.rec.Checkpoint, s.rec.Total = ls.Skipped, ls.Ambiguous, ls.Checkpoint, ls.Total
	s.rec.CancelRequested, s.rec.PauseReason = ls.CancelRequested, pause
	// The run's events carry the lease and heartbeat the database now has: without them a
	// live page shows the lease of the run's start expiring while the run renews it.
	if !ls.LeaseUntil.IsZero() {
		s.rec.LeaseUntil, s.rec.HeartbeatAt = ls.LeaseUntil, ls.HeartbeatAt
	}
	if s.stop == "" {
		switch {
		case ls.CancelRequested:
			s.stop = bt.StopCancelled
		case pause == bt.StopMaintenance:
			s.stop = bt.StopMaintenance
		case pause != "":
			s.stop = bt.StopPaused
		}
	}
}

// fail records a write error; a lost lease is sticky.
func (s *state) fail(err error) error {
	if errors.Is(err, bt.ErrLeaseLost) {
		s.mu.Lock()
		s.lost = true
		s.mu.Unlock()
		s.leaseLost.Inc()
	}
	if connretry.IsUnavailable(err) {
		s.mu.Lock()
		s.dbLost = true
		s.mu.Unlock()
	}
	return err
}

// requestStop asks the run to stop at its next boundary, unless it already was; tripped is
// the stop condition behind a STOP_CONDITION request.
func (s *state) requestStop(reason bt.StopReason, tripped *bt.Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop == "" {
		s.stop, s.tripped = reason, tripped
	}
}

// err returns why the run must stop here, if it must.
func (s *state) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost {
		return bt.ErrLeaseLost
	}
	if s.stop != "" {
		return &bt.Error{Code: bt.CodeStopped, Message: "run asked to stop: " + string(s.stop)}
	}
	return nil
}

// leaseLeft returns how long the lease has left at now, and how long ago the flags were read.
func (s *state) leaseLeft(now time.Time) (left, flagsAge time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaseEnd.Sub(now), now.Sub(s.flagsAt)
}

func (s *state) snapshot() bt.RunRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// ended records the run as the finish (or an abandon) stored it; lost says the run may
// write nothing more.
func (s *state) ended(rec *bt.RunRecord, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec = *rec
	s.lost = s.lost || lost
}

func (s *state) running() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Status = bt.StatusRunning
}

// ending is what the run's outcome is judged on.
type ending struct {
	stop       bt.StopReason
	lost       bool
	dbLost     bool // a database write of the run failed because the database went away
	checkpoint string
	tripped    *bt.Check
}

func (s *state) ending() ending {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ending{stop: s.stop, lost: s.lost, dbLost: s.dbLost, checkpoint: s.rec.Checkpoint, tripped: s.tripped}
}

// Check is a safe point: it renews the lease when less than half is left, learns of cancel
// and pause requests, and returns an error wrapping bt.ErrStopped when the job must stop here.
func (run *Run) Check(ctx context.Context) error {
	if err := run.st.err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	left, flagsAge := run.st.leaseLeft(run.now())
	switch {
	case left < run.lease/2:
		if err := run.renew(ctx); err != nil {
			return err
		}
	case flagsAge > min(time.Second, run.lease/4):
		sent := run.now()
		ls, pause, err := run.d.Store.Poll(ctx, run.fence)
		if err != nil {
			return run.st.fail(err)
		}
		run.st.apply(sent, ls, pause)
	}
	return run.st.err()
}

// renew extends the database lease — the fence — and then the Redis lock, by compare-and-set
// on the token. The Redis call is bounded by a short timeout: a Redis outage must slow a
// renewal by at most that, never cost the run its lease.
func (run *Run) renew(ctx context.Context) (err error) {
	if run.d.Tracer != nil {
		var span trace.Span
		ctx, span = run.startSpan(ctx, "lease.renew")
		if span.IsRecording() {
			span.SetAttributes(AttrLeaseSeconds.Float64(run.lease.Seconds()))
		}
		defer func() { endSpan(span, err) }()
	}
	sent := run.now()
	ls, pause, err := run.d.Store.Renew(ctx, run.fence)
	if err != nil {
		return run.st.fail(err)
	}
	run.st.apply(sent, ls, pause)
	run.d.Metrics.LeaseRenewals.Inc()

	rctx, cancel := context.WithTimeout(ctx, RedisTimeout(run.lease))
	defer cancel()
	ok, err := run.d.Locks.Extend(rctx, run.started.JobName, run.fence.Token, run.lease)
	if err != nil {
		run.d.Metrics.LockErrors.Inc()
		run.log.Warn("extend redis lock failed; the database lease still fences", "err", err)
	} else if !ok {
		// The key was lost (Redis restarted or flushed). Take it back so Redis keeps
		// pre-empting; if another token holds it, the database lease still decides.
		if got, err := run.d.Locks.Acquire(rctx, run.started.JobName, run.fence.Token, run.lease); err != nil || !got {
			run.log.Warn("redis lock lost and not re-acquired; the database lease still fences", "err", err)
		}
	}
	return nil
}

// RedisTimeout bounds one lock operation: a tenth of the lease, between 50ms and 500ms.
func RedisTimeout(lease time.Duration) time.Duration {
	return min(max(lease/10, 50*time.Millisecond), 500*time.Millisecond)
}

// SetTotal records how many items the run expects, for progress and ETA.
func (run *Run) SetTotal(ctx context.Context, n int64) error {
	sent := run.now()
	ls, pause, err := run.d.Store.SetTotal(ctx, run.fence, n)
	if err != nil {
		return run.st.fail(err)
	}
	run.st.apply(sent, ls, pause)
	run.publish(false)
	return nil
}

// RequestStop asks the run to stop at its next boundary for reason, unless it already was.
func (run *Run) RequestStop(reason bt.StopReason) { run.st.requestStop(reason, nil) }

// Abandon ends a run that did not stop within the shutdown timeout: it cancels the job's
// context and records the run FAILED (resumable) under its still-valid lease.
func (run *Run) Abandon() {
	run.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg := fmt.Sprintf("instance %s shut down before the job reached a boundary; start with RESUME to continue from checkpoint %q",
		run.d.Instance, run.Snapshot().Checkpoint)
	if rec, err := run.d.Store.Finish(ctx, run.fence, bt.StatusFailed, bt.StopShutdownTimer, msg); err == nil {
		run.st.ended(rec, true)
		run.publish(true)
	}
	_, _ = run.d.Locks.Release(ctx, run.started.JobName, run.fence.Token)
}
