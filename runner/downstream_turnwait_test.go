package runner_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// slotJob is a job of two targets on downstream "solo", one call in flight at a time. The
// first call made holds the slot: it returns once firstReturns says so (nil: never), and
// ignores its context, as a holder that died in its call would. With firstReturns, the
// second call made never returns while the test runs; later calls return at once.
type slotJob struct {
	job   runner.Job
	mu    sync.Mutex
	calls map[string]int
	order []string
	gate  chan struct{} // closed when the test ends: the stuck calls return
}

func newSlotJob(t *testing.T, name string, firstReturns func() bool) *slotJob {
	j := &slotJob{calls: map[string]int{}, gate: make(chan struct{})}
	t.Cleanup(func() { close(j.gate) })
	j.job = turnJob(name, "solo", bt.DownstreamLimits{Concurrency: 1}, []string{"a", "b"}, func(ctx context.Context, item runner.Item) error {
		j.mu.Lock()
		j.calls[item.Target]++
		j.order = append(j.order, item.Target)
		n := len(j.order)
		j.mu.Unlock()
		if n == 1 && firstReturns != nil {
			// Polls, ignoring ctx: the lease ending does not end the call.
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for !firstReturns() {
				select {
				case <-j.gate:
					return nil
				case <-tick.C:
				}
			}
			return nil
		}
		if n == 1 || n == 2 && firstReturns != nil {
			<-j.gate
		}
		return nil
	})
	return j
}

func (j *slotJob) called() (order []string, calls map[string]int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	c := map[string]int{}
	for k, v := range j.calls {
		c[k] = v
	}
	return append([]string(nil), j.order...), c
}

// recoverRun runs the recoverer on r until run id has ended by its lease.
func recoverRun(b *bundle, r *runner.Runner, id int64) {
	b.T.Helper()
	waitFor(b.T, "the holder's lease to expire and the recoverer to end its run", func() bool {
		r.RecoverExpired(context.Background())
		return b.run(id).Status == bt.StatusFailed
	})
}

// A holder that dies while a call waits for a turn at its downstream (here a free slot)
// leaves that call's target not in doubt: no call was made, the recoverer settles it
// TRANSIENT, not called, and a RESUME calls it once. The target whose call had its turn is
// in doubt (AMBIGUOUS_EFFECT).
func TestDownstreamTurnWaitLeavesNoTargetInDoubt(t *testing.T) {
	b := setup(t)
	j := newSlotJob(t, "turn-wait", nil)
	holder := b.runner(nil, j.job)
	other := b.runner(nil, j.job)
	id := mustStart(t, holder, runner.StartParams{Job: "turn-wait"})
	waitFor(t, "the first call to take the slot", func() bool { o, _ := j.called(); return len(o) == 1 })
	recoverRun(b, other, id)

	order, _ := j.called()
	called, waited := order[0], map[string]string{"a": "b", "b": "a"}[order[0]]
	if state, _ := b.ledgerState("turn-wait", called); state != string(bt.LedgerAmbiguous) {
		t.Errorf("%s, called when its holder died, is %q; want AMBIGUOUS_EFFECT", called, state)
	}
	state, lastError := b.ledgerState("turn-wait", waited)
	if state != string(bt.LedgerTransient) || !strings.Contains(lastError, "not called") {
		t.Fatalf("%s, waiting for its turn when its holder died, is %q (%q); want TRANSIENT, not called", waited, state, lastError)
	}
	b.checkCounts(other, "turn-wait", 1, id)

	res := mustStart(t, other, runner.StartParams{Job: "turn-wait", Mode: bt.ModeResume})
	b.waitStatus(res, bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled)
	_, calls := j.called()
	if calls[waited] != 1 || calls[called] != 1 {
		t.Errorf("calls %v after the resume; want each target called once", calls)
	}
	if state, _ := b.ledgerState("turn-wait", waited); state != string(bt.LedgerConfirmed) {
		t.Errorf("%s is %q after the resume; want CONFIRMED", waited, state)
	}
	if state, _ := b.ledgerState("turn-wait", called); state != string(bt.LedgerAmbiguous) {
		t.Errorf("%s is %q after the resume; want AMBIGUOUS_EFFECT still", called, state)
	}
}

// A holder that dies after its call was given its turn, having waited for it, leaves the
// target in doubt: the call may have been made.
func TestDownstreamGrantedTurnStaysInDoubt(t *testing.T) {
	b := setup(t)
	// The first call returns once the other call waits for its slot, marked waiting; the
	// other then takes the slot and never returns.
	waiting := func() bool {
		keys, err := b.Redis.Keys(context.Background(), "baton:{"+b.Env+"}:ds:~turn:*").Result()
		for _, k := range keys {
			if v, _ := b.Redis.Get(context.Background(), k).Result(); err == nil && strings.HasPrefix(v, "w") {
				return true
			}
		}
		return false
	}
	j := newSlotJob(t, "turn-granted", waiting)
	holder := b.runner(nil, j.job)
	other := b.runner(nil, j.job)
	id := mustStart(t, holder, runner.StartParams{Job: "turn-granted"})
	waitFor(t, "the second call to take the slot", func() bool { o, _ := j.called(); return len(o) == 2 })
	granted, err := b.Redis.Keys(context.Background(), "baton:{"+b.Env+"}:ds:~turn:*").Result()
	if err != nil || len(granted) != 2 {
		t.Fatalf("turn markers %v (%v); want one per call", granted, err)
	}
	for _, k := range granted {
		if v, err := b.Redis.Get(context.Background(), k).Result(); err != nil || v != "g" {
			t.Fatalf("turn marker %s is %q (%v); want both turns granted", k, v, err)
		}
	}
	recoverRun(b, other, id)

	// Neither call's answer was committed before the holder stopped: both are in doubt, the
	// one granted after its wait too.
	order, _ := j.called()
	for _, target := range order {
		if state, _ := b.ledgerState("turn-granted", target); state != string(bt.LedgerAmbiguous) {
			t.Errorf("%s, called when its holder died, is %q; want AMBIGUOUS_EFFECT", target, state)
		}
	}
	b.checkCounts(other, "turn-granted", 1, id)
}

// A holder that dies while a call waits out the rate turn it was granted (GCRA grants at
// once, with the time to wait) leaves that call's target not in doubt: the turn is not taken
// until the wait is over, the recoverer revokes it first and settles the target TRANSIENT,
// not called, and a RESUME calls it once. The target whose call had its turn is in doubt.
func TestDownstreamRateWaitLeavesNoTargetInDoubt(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	calls := map[string]int{}
	var order []string
	gate := make(chan struct{}) // closed when the test ends: the stuck call returns
	t.Cleanup(func() { close(gate) })
	job := turnJob("rate-wait", "paced", bt.DownstreamLimits{RatePerSecond: 4, Burst: 1}, []string{"a", "b"}, func(ctx context.Context, item runner.Item) error {
		mu.Lock()
		calls[item.Target]++
		order = append(order, item.Target)
		n := len(order)
		mu.Unlock()
		if n == 1 {
			<-gate // the first call made holds the round, ignoring its context
		}
		return nil
	})
	called := func() ([]string, map[string]int) {
		mu.Lock()
		defer mu.Unlock()
		c := map[string]int{}
		for k, v := range calls {
			c[k] = v
		}
		return append([]string(nil), order...), c
	}
	holder := b.runner(nil, job)
	other := b.runner(nil, job)
	stalled, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	holder.StallDownstreamTurns(func(string) {
		once.Do(func() { close(stalled) })
		<-release // the holder is gone while its call waits for its rate turn
	})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	id := mustStart(t, holder, runner.StartParams{Job: "rate-wait"})
	waitFor(t, "one call to be made and the other to wait out its rate turn", func() bool {
		select {
		case <-stalled:
			o, _ := called()
			return len(o) == 1
		default:
			return false
		}
	})
	recoverRun(b, other, id)

	order0, _ := called()
	first, waited := order0[0], map[string]string{"a": "b", "b": "a"}[order0[0]]
	if state, _ := b.ledgerState("rate-wait", first); state != string(bt.LedgerAmbiguous) {
		t.Errorf("%s, called when its holder died, is %q; want AMBIGUOUS_EFFECT", first, state)
	}
	state, lastError := b.ledgerState("rate-wait", waited)
	if state != string(bt.LedgerTransient) || !strings.Contains(lastError, "not called") {
		t.Fatalf("%s, waiting out its rate turn when its holder died, is %q (%q); want TRANSIENT, not called", waited, state, lastError)
	}
	b.checkCounts(other, "rate-wait", 1, id)

	close(release) // the stalled holder wakes: its turn was revoked, it does not call
	released = true
	res := mustStart(t, other, runner.StartParams{Job: "rate-wait", Mode: bt.ModeResume})
	b.waitStatus(res, bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled)
	if _, c := called(); c[waited] != 1 || c[first] != 1 {
		t.Errorf("calls %v after the resume; want each target called once", c)
	}
	if state, _ := b.ledgerState("rate-wait", waited); state != string(bt.LedgerConfirmed) {
		t.Errorf("%s is %q after the resume; want CONFIRMED", waited, state)
	}
}
