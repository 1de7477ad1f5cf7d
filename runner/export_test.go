package runner

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/pipeline"
)

// Wake wakes the scheduler loop at once (tests use it to make every instance pass now).
func (r *Runner) Wake() { r.sched.Wake() }

// SlotWanted reports whether the scheduler is waiting for a free slot for a due fire.
func (r *Runner) SlotWanted() bool { return r.sched.SlotWanted() }

// RedoneWrites reports how many of r's item writes relied on a ledger state that was not so.
func (r *Runner) RedoneWrites() int64 { return r.store.RedoneWrites() }

// ResumeDue starts the due auto-resumes now, as a scheduler pass does, and returns how long
// until the next one not yet due is (negative: none).
func (r *Runner) ResumeDue(ctx context.Context) time.Duration { return r.resumeDue(ctx) }

// DownstreamLimits returns the limits r applies to downstream name now (its cached copy).
func (r *Runner) DownstreamLimits(name string) (DownstreamLimits, bool) {
	s, ok := r.ds.get(name)
	return s.Limits, ok
}

// AskToStop asks run to stop at its next boundary for reason, at once, as a pause seen by the
// worker or a shutdown does: a call under way returns to a run that knows it must stop.
func (run *Run) AskToStop(reason bt.StopReason) { run.requestStop(reason) }

// FailDownstreamAcquire makes every Acquire of r's downstreams fail with fault's error (nil
// error: ask the limiter as usual); a nil fault lifts it.
func (r *Runner) FailDownstreamAcquire(fault func(name string) error) {
	if fault == nil {
		r.ds.acquireFault.Store(nil)
		return
	}
	r.ds.acquireFault.Store(&fault)
}

// LosePlanShardsReplies makes the next n committed PlanShards replies of r fail as if the
// connection broke just after the commit.
func (r *Runner) LosePlanShardsReplies(n int) { r.shards.lostReplies.Store(int32(n)) }

// SetDownstreamClock sets the clock r's downstreams wait out a quota hold by (nil: time.Now).
func (r *Runner) SetDownstreamClock(now func() time.Time) {
	if now == nil {
		r.ds.clock.Store(nil)
		return
	}
	r.ds.clock.Store(&now)
}

// StallDownstreamTurns makes every call of r whose downstream turn was granted with a wait
// run stall(intent id) when the wait is over, before it takes the turn (nil: none).
func (r *Runner) StallDownstreamTurns(stall func(id string)) {
	if stall == nil {
		r.ds.waited.Store(nil)
		return
	}
	r.ds.waited.Store(&stall)
}

// AcquireDownstream takes a turn at downstream name as a call does, and ends it at once.
func (r *Runner) AcquireDownstream(ctx context.Context, name string) error {
	t, err := r.ds.Acquire(ctx, name, pipeline.TurnIntent{}, time.Now().Add(time.Second))
	if err == nil {
		t.Done(nil)
	}
	return err
}

// DownstreamHeld says why calls to name are held at the boundary now, as a batch asks.
func (r *Runner) DownstreamHeld(name string) string { return r.ds.Held(name) }
