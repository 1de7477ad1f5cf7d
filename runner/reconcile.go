package runner

import (
	"context"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
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

// reconcileTimeout is the configured bound of one hook call.
func (r *Runner) reconcileTimeout() time.Duration {
	if r.cfg.ReconcileTimeout > 0 {
		return r.cfg.ReconcileTimeout
	}
	return DefaultReconcileTimeout
}

// startReconciles runs the reconcile worker loop beside Run's other loops, on instances with
// worker slots (an API-only instance leaves its requests to the others).
func (r *Runner) startReconciles(ctx context.Context, wg *sync.WaitGroup) {
	if cap(r.slots) == 0 {
		return
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.reconciles.Serve(ctx) }()
}

// reconcileLeases lists the registered jobs with a reconcile hook and each one's lease.
func (r *Runner) reconcileLeases() []postgres.ReconcileLease {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []postgres.ReconcileLease
	for name, j := range r.jobs {
		if _, ok := j.(Reconciler); ok {
			out = append(out, postgres.ReconcileLease{Job: name, Lease: leaseOf(j, r.cfg.DefaultLease)})
		}
	}
	return out
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

// publishReconcile sends a reconcile request's state to the EventSink, if it takes them.
func (r *Runner) publishReconcile(q bt.ReconcileRequest) {
	if s, ok := r.cfg.Events.(ReconcileSink); ok {
		s.ReconcileChanged(q)
	}
}
