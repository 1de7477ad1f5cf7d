package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// holdPoll is how often a batch held at the boundary looks again, reaching a safe point each
// time (the lease renewed, a stop request seen).
const holdPoll = 200 * time.Millisecond

// hold keeps the batch at the boundary, before any intent is committed, while a downstream
// its pending items call is held (paused, its quota spent). The run waits at safe points: its
// lease is renewed and a cancel or pause ends the wait; nothing fails.
func (b *batch) hold(ctx context.Context) error {
	ds := b.run.d.Downstreams
	if ds == nil {
		return nil
	}
	logged := ""
	for {
		name, why := b.heldBy(ds)
		if why == "" {
			if logged != "" {
				b.run.log.Info("calls released at the boundary", "downstream", logged)
			}
			return nil
		}
		if logged != name {
			b.run.log.Info("calls held at the boundary", "downstream", name, "reason", why)
			logged = name
		}
		t := time.NewTimer(holdPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if err := b.run.Check(ctx); err != nil {
			return err
		}
	}
}

// heldBy returns the first held downstream among the pending items', and why.
func (b *batch) heldBy(ds Downstreams) (name, why string) {
	for _, st := range b.pending {
		if n := st.item.Downstream; n != "" && n != name {
			if w := ds.Held(n); w != "" {
				return n, w
			}
		}
	}
	return "", ""
}

// turn waits for item's call to take its turn at its downstream. The wait ends by half of
// what is left of the call's context, so a call that waited still has the other half: it
// never starts late enough to be cut off by the lease. No turn in time is a NotCalled error.
func (b *batch) turn(ictx context.Context, st *itemState) (Turn, error) {
	ds, item := b.run.d.Downstreams, st.item
	if ds == nil || item.Downstream == "" {
		return nil, nil
	}
	var intent TurnIntent
	if item.External {
		// A holder that dies before the turn is granted leaves the target as the call found
		// it: TRANSIENT, or the rejected class a replay retries (notCalledOutcome).
		intent = TurnIntent{ID: TurnID(b.run.fence.RunID, st.base.IdempotencyKey, st.attempt), NotCalled: bt.LedgerTransient}
		if rejected(st.before) {
			intent.NotCalled = st.before
		}
	}
	now := time.Now()
	deadline := now.Add(time.Minute)
	if dl, ok := ictx.Deadline(); ok {
		deadline = now.Add(dl.Sub(now) / 2)
	}
	t, err := ds.Acquire(ictx, item.Downstream, intent, deadline)
	if err != nil && ictx.Err() != nil {
		err = fmt.Errorf("%w: %w", ErrWaiting, err) // the lease or the run ended the wait
	}
	if err != nil {
		return nil, NotCalled(fmt.Errorf("not called: downstream %q gave no turn: %w", item.Downstream, err))
	}
	return t, nil
}

// ErrWaiting marks an Acquire error that is a wait for a turn, not a failure to give one: no
// turn came in time, the downstream is held (paused, its quota spent), or the wait was ended.
// Such a call waits for its turn again as long as the run goes on; a call whose downstream
// fails otherwise is tried a bounded number of rounds (maxNotCalled).
var ErrWaiting = errors.New("waiting for a turn")

// ErrFreshIntent marks, with ErrWaiting, a call not made whose retry must write its intent
// under the next attempt's number, not this one's again: Redis may still hold this attempt's
// turn, which the recoverer would take for a call never made.
var ErrFreshIntent = errors.New("the retry needs a fresh intent")

func isWaiting(err error) bool { return errors.Is(err, ErrWaiting) }
