package runner

import (
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Reconciles run off the request path (runner/internal/replay): LedgerService.Reconcile
// records a request PENDING; a worker of any instance with the job registered claims it, takes
// one of its pool slots, and calls the job's hook under the request's lease, bounded by a
// timeout. The outcome is written fenced on that lease and published to the EventSink, if it
// is also a ReconcileSink.

// DefaultReconcileTimeout bounds a reconcile hook's call when Config.ReconcileTimeout is 0.
const DefaultReconcileTimeout = 30 * time.Second

// ReconcileSink is an EventSink that also receives every change of a reconcile request:
// recorded, claimed, retried, ended. The runner checks Config.Events for it.
type ReconcileSink interface {
	ReconcileChanged(req bt.ReconcileRequest)
}

// reconcileSlots lends the worker pool to reconciles.
type reconcileSlots struct{ r *Runner }

// Take holds startMu shared, as Start does, so that Shutdown waits for the reconcile it counts.
func (s reconcileSlots) Take() bool {
	r := s.r
	r.startMu.RLock()
	defer r.startMu.RUnlock()
	if r.draining.Load() {
		return false
	}
	select {
	case r.slots <- struct{}{}:
	default:
		return false
	}
	r.workers.Add(1)
	return true
}

func (s reconcileSlots) Free() { s.r.freeSlot() }
func (s reconcileSlots) Done() { s.r.workers.Done() }
